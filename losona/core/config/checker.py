"""The one checker: a config node into its pydantic schema, or one line per problem,
`<file or override>: '<dotted.key>': expected <what>, found <value>`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin

from omegaconf import OmegaConf
from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo

from losona.core.errors import LosonaError

# Validation context of a node read from config (rather than built in code).
FROM_CONFIG = "config"


class Refusal(ValueError):
    """A schema's own check failed: what was expected and, unless it must stay unseen, found;
    `key` names a setting inside the node when the check is not a field's own."""

    def __init__(self, expected: str, found: str | None = None, key: str | None = None) -> None:
        super().__init__(expected)
        self.expected, self.found, self.key = expected, found, key


S = TypeVar("S", bound=BaseModel)
Origin = str | Callable[[str], str]


def check(schema: type[S], node: Any, *, origin: Origin, key: str) -> S:
    """`node` as a `schema` object, or one LosonaError naming the file, key, expected, found.
    `key` is the node's dotted place ("" at the top); `origin` the node's file, or a function
    from a dotted key to where its value came from (a file, or the command line)."""
    try:
        values = OmegaConf.to_container(node, resolve=True) if OmegaConf.is_config(node) else node
        if (missing := _first_missing(values, key)) is not None:
            raise LosonaError(
                f"{_place(origin, missing)}: '{missing}': expected a value (give it on the "
                f"command line, e.g. {missing}=...), found ??? (a required setting left unset)"
            )
        return schema.model_validate(values, context=FROM_CONFIG)
    except ValidationError as exc:
        # Every problem pydantic found, one per line, in the one format.
        lines = list(dict.fromkeys(_refusal(schema, error, origin, key) for error in exc.errors()))
        raise LosonaError("\n  ".join(lines)) from None


def _place(origin: Origin, dotted: str) -> str:
    return origin(dotted) if callable(origin) else origin


def _first_missing(value: Any, key: str) -> str | None:
    """The dotted key of the first OmegaConf mandatory `???` left unset in a node, if any."""
    if value == "???":
        return key
    items = (
        value.items()
        if isinstance(value, Mapping)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    found = (_first_missing(item, f"{key}.{part}" if key else str(part)) for part, item in items)
    return next((missing for missing in found if missing is not None), None)


def _refusal(schema: type[BaseModel], error: Any, origin: Origin, key: str) -> str:
    loc = [str(part) for part in error["loc"]]
    cause = (error.get("ctx") or {}).get("error")
    found = _show(error.get("input"))
    if isinstance(cause, Refusal):
        expected = cause.expected
        loc += cause.key.split(".") if cause.key else []
        found = cause.found if cause.found is not None else found
    elif error["type"] == "extra_forbidden":
        expected = f"one of the settings {sorted(_fields(_walk(schema, loc[:-1])[0]))}"
        found = "an unknown setting"
    elif error["type"] == "missing":
        expected, found = _walk(schema, loc)[1] or "a value", "nothing (it is missing)"
    else:
        expected = _walk(schema, loc)[1] or error["msg"].removeprefix("Input should be ")
    dotted = ".".join(part for part in [key, *loc] if part)
    return f"{_place(origin, dotted)}: '{dotted}': expected {expected}, found {found}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema a field holds, directly or as `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in get_args(annotation) if (m := _model_in(arg)) is not None), None)


def _walk(schema: type[BaseModel], loc: list[str]) -> tuple[type[BaseModel] | None, str | None]:
    """The schema holding the last field of `loc`, and that field's description."""
    model: type[BaseModel] | None = schema
    description = None
    keys = 0  # keys or indices still to pass before `part` names a field of `model` again
    for part in loc:
        if keys:
            keys -= 1
            continue  # the item's own schema applies to what follows
        if model is None:
            break  # inside a list or mapping: the enclosing field's words still apply
        fields = _fields(model)
        if part not in fields:
            break
        annotation = fields[part].annotation
        description = fields[part].description
        model = _model_in(annotation)
        keys = _depth(annotation) if model is not None else 0
    return model, description


def _depth(annotation: Any) -> int:
    """How many keys or indices stand between a field and the schema it holds: 0 for a
    schema, 1 for a list or mapping of schemas, 2 for a mapping of lists of them."""

    origin = get_origin(annotation)
    if origin in (dict, list, tuple):
        return 1 + _depth(get_args(annotation)[-1 if origin is dict else 0])
    # `X | None` or `Annotated[X, ...]`: what X holds.
    return max((_depth(arg) for arg in get_args(annotation)), default=0)


def _fields(model: type[BaseModel] | None) -> dict[str, FieldInfo]:
    """A schema's fields by the key a config writes (the alias, if any)."""
    return {f.alias or name: f for name, f in (model.model_fields.items() if model else [])}
