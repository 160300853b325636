"""The dynamic second turn's settings (conf/dynamic/default.yaml; docs/dynamic.md)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from losona.core.config.checker import Refusal
from losona.core.config.values import Schema, Text
from losona.core.errors import LosonaError

OptionNames = Annotated[
    tuple[Text, ...], Field(description="a list of option names without repeats (may be empty)")
]


class DynamicSettings(Schema):
    """The dynamic second turn: which sweep cells get one, who decides the arms, who writes.
    Off while `judges` is empty: dvc.yaml's matrix over an empty list is no stage at all."""

    KEY: ClassVar[str] = "dynamic"
    FILE: ClassVar[str] = "conf/dynamic/default.yaml"
    EVERY_KEY: ClassVar[bool] = True

    # The first-turn judge(s) whose verdicts put each trial in an arm; each also judges the
    # second turn. Empty: the extension is off.
    judges: OptionNames
    models: OptionNames  # the sweep's models to extend
    conditions: OptionNames  # the sweep's conditions to extend
    # Where the sanction and the neutral continuation come from: the scenario's own
    # follow-up material, or a group model reacting to the subject's actual reply.
    source: Literal["scripted", "simulated"]
    group_model: Text  # a conf/model option: the group model of source simulated

    @field_validator("judges", "models", "conditions")
    @classmethod
    def _each_once(cls, names: tuple[str, ...]) -> tuple[str, ...]:
        if len(set(names)) != len(names):
            raise Refusal("names without repeats", repr(list(names)))
        return names

    @model_validator(mode="after")
    def _cells_when_on(self) -> Self:
        if self.judges:
            for key in ("models", "conditions"):
                if not getattr(self, key):
                    raise Refusal(
                        "at least one name while dynamic.judges is set (the extension is on)",
                        "[]",
                        key,
                    )
        return self

    @property
    def on(self) -> bool:
        """Whether the extension runs at all."""
        return bool(self.judges)

    def check_sweep(self, sweep: Mapping[str, Sequence[str]], where: str) -> None:
        """Refuse cells the sweep does not run: the second turn continues the first."""
        for key in ("judges", "models", "conditions"):
            outside = [name for name in getattr(self, key) if name not in sweep[key]]
            if outside:
                raise LosonaError(
                    f"{where}: 'dynamic.{key}': expected names from sweep.{key} "
                    f"{list(sweep[key])} (params.yaml: the second turn continues the sweep's "
                    f"first), found {outside}"
                )
