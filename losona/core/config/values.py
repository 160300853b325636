"""The value types every config schema is made of, and `Schema`, the base of every node."""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, ClassVar, Self

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    Strict,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    ValidationInfo,
    model_validator,
)

from losona.core.config.checker import FROM_CONFIG, Refusal, check

# Strict: a config's "3" is text, not a number, and `true` is not 1. Each type carries the
# words of what it expects, which is what a refusal says.

Text = Annotated[
    StrictStr,
    StringConstraints(strip_whitespace=True, min_length=1),
    Field(description="non-empty text"),
]
Flag = Annotated[StrictBool, Field(description="true or false")]
Count = Annotated[StrictInt, Field(ge=1, description="an integer of at least 1")]
WholeNumber = Annotated[StrictInt, Field(ge=0, description="an integer of at least 0")]
AnyInteger = Annotated[StrictInt, Field(description="an integer")]
PositiveNumber = Annotated[
    float, Strict(), Field(gt=0, allow_inf_nan=False, description="a finite number above 0")
]
Dollars = Annotated[
    float, Strict(), Field(ge=0, allow_inf_nan=False, description="a finite number of at least 0")
]
CostCap = Annotated[
    Dollars | None, Field(description="null or a finite, non-negative number of dollars")
]
Names = Annotated[tuple[Text, ...], Field(description="a list of names")]
PathText = Annotated[StrictStr, Field(min_length=1, description="a path (non-empty text)")]
# A path given in code may be a Path; text from a config is one too.
LocalPath = Annotated[Path, Field(description="a path")]


def no_inf_nan(value: Any, where: str = "") -> None:
    """Refuse NaN and infinity anywhere inside a free-form mapping (e.g. `params`)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise Refusal("a finite number", repr(value), key=where or None)
    if isinstance(value, Mapping):
        for key, item in value.items():
            no_inf_nan(item, f"{where}.{key}" if where else str(key))
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            no_inf_nan(item, f"{where}[{i}]")


class Schema(BaseModel):
    """A config node: frozen, strict, no unknown keys, no NaN or infinity."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    # The node's dotted place in the composed config (e.g. "sampling"), for messages.
    KEY: ClassVar[str] = ""
    # The file a node of this schema is read from when no other is named.
    FILE: ClassVar[str] = "the config"
    # Whether a config must write out every setting, defaults being for code only (nodes
    # that conf/ spells out in full, so that a setting left out is a mistake, not a default).
    EVERY_KEY: ClassVar[bool] = False

    @model_validator(mode="before")
    @classmethod
    def _every_key_written(cls, node: Any, info: ValidationInfo) -> Any:
        if cls.EVERY_KEY and info.context == FROM_CONFIG and isinstance(node, Mapping):
            for name, field in cls.model_fields.items():
                key = field.alias or name
                if key not in node:
                    raise Refusal(field.description or "a value", "nothing (it is missing)", key)
        return node

    @classmethod
    def from_config(cls, node: Any, origin: str | None = None, key: str | None = None) -> Self:
        """Check a plain config node (see `check`)."""
        return check(cls, node, origin=origin or cls.FILE, key=cls.KEY if key is None else key)
