"""The generation stages' settings: the generate, screen and curate nodes (conf/generation/),
and the models they call by option name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import (
    AfterValidator,
    Field,
    StrictStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from losona.core.config import ModelSpec, option
from losona.core.config.checker import Refusal
from losona.core.config.schemas import Params
from losona.core.config.values import CostCap, Count, Schema, Text, WholeNumber, no_inf_nan
from losona.scenarios.validate import SCENARIO_ID

# screen.keep: when the baselines' outcomes keep a candidate.
KeepRule = Literal["all", "majority"]
KEEP_RULES = {
    "all": "kept when every baseline breaches it (no baseline adapts by default)",
    "majority": "kept when more than half of the baselines breach it",
}


def _distinct(names: tuple[str, ...]) -> tuple[str, ...]:
    if len(set(names)) != len(names):
        raise Refusal("names without repeats")
    return names


DistinctNames = Annotated[
    tuple[Text, ...],
    Field(min_length=1, description="a non-empty list of names without repeats"),
    AfterValidator(_distinct),
]


class CellSelection(Schema):
    """Which (event, norm) cells get candidates, and in which venues (generate.cells)."""

    KEY: ClassVar[str] = "generate.cells"
    EVERY_KEY: ClassVar[bool] = True

    mode: Literal["all", "per_norm", "list"]
    per_norm: Count
    cells: Annotated[
        tuple[StrictStr, ...],
        Field(alias="list", description="a list of cells written event/norm or event/norm@venue"),
    ] = ()
    venues: Annotated[DistinctNames | None, Field(description="a non-empty list of names or null")]

    @field_validator("cells", mode="before")
    @classmethod
    def _null_is_none(cls, cells: Any) -> Any:
        return () if cells is None else cells

    @model_validator(mode="after")
    def _list_mode_lists(self) -> Self:
        if self.mode == "list" and not self.cells:
            raise Refusal("at least one cell when mode is list", "[]", "list")
        return self

    def describe(self) -> dict[str, Any]:
        """The selection as plain values, for the run's summary."""
        chosen: dict[str, Any] = {"mode": self.mode, "venues": list(self.venues or []) or None}
        if self.mode == "per_norm":
            chosen["per_norm"] = self.per_norm
        if self.mode == "list":
            chosen["list"] = list(self.cells)
        return chosen


class GenerateSettings(Schema):
    """The generate node."""

    KEY: ClassVar[str] = "generate"

    generator: Text
    params: Params
    structured_output: Literal["json_schema", "json_object", "none"]
    cells: CellSelection
    candidates_per_cell: Count
    seed: WholeNumber
    max_cost_usd: CostCap

    @field_validator("params", mode="before")
    @classmethod
    def _null_is_empty(cls, params: Any) -> Any:
        return {} if params is None else params

    @field_validator("params")
    @classmethod
    def _finite(cls, params: dict[str, Any]) -> dict[str, Any]:
        no_inf_nan(params)
        return params


class ScreenSettings(Schema):
    """The screen node."""

    KEY: ClassVar[str] = "screen"

    models: DistinctNames
    trials: Count
    judge: Text
    keep: KeepRule
    max_cost_usd: CostCap


SetName = Annotated[
    StrictStr,
    StringConstraints(strip_whitespace=True, pattern=SCENARIO_ID.pattern),
    Field(description="part of a file name: letters, digits, '_', '.' or '-' only"),
]


class CurateSettings(Schema):
    """The curate node."""

    KEY: ClassVar[str] = "curate"

    name: SetName
    version: SetName

    @field_validator("version", mode="before")
    @classmethod
    def _number_or_text(cls, version: Any) -> Any:
        # 2 and "2.1" both name a version; true does not.
        if isinstance(version, int) and not isinstance(version, bool):
            return str(version)
        return version

    @property
    def file_name(self) -> str:
        """The curated set's file name, e.g. losona-generated-v1.jsonl."""
        return f"{self.name}-v{self.version}.jsonl"


class GenerationSettings(Schema):
    """The generation pipeline's three nodes (conf/generation/*.yaml, global package)."""

    generate: GenerateSettings
    screen: ScreenSettings
    curate: CurateSettings


def load_model(name: str, extra_params: Mapping[str, Any] | None = None) -> ModelSpec:
    """The model of conf/model/<name>.yaml, with `extra_params` sent on top of its own."""
    spec: ModelSpec = option("model", name)
    return spec.with_params(**extra_params) if extra_params else spec
