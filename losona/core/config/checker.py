"""The one checker: a config node into its pydantic schema, or one line per problem,
`<file or override>: '<dotted.key>': expected <what>, found <value>`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypeVar, get_args, get_origin

from omegaconf import OmegaConf
from pydantic import BaseModel, ValidationError

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
        _no_missing(values, key)
        return schema.model_validate(values, context=FROM_CONFIG)
    except _Missing as missing:
        where = origin(missing.key) if callable(origin) else origin
        raise LosonaError(
            f"{where}: '{missing.key}': expected a value (give it on the command line, e.g. "
            f"{missing.key}=...), found ??? (a required setting left unset)"
        ) from None
    except ValidationError as exc:
        # Every problem pydantic found, one per line, in the one format.
        lines = list(dict.fromkeys(_refusal(schema, error, origin, key) for error in exc.errors()))
        raise LosonaError("\n  ".join(lines)) from None


class _Missing(Exception):
    def __init__(self, key: str) -> None:
        self.key = key


def _no_missing(value: Any, key: str) -> None:
    """Find OmegaConf's mandatory `???` left unset anywhere in a node."""
    if value == "???":
        raise _Missing(key)
    items = (
        value.items()
        if isinstance(value, Mapping)
        else enumerate(value)
        if isinstance(value, list)
        else ()
    )
    for part, item in items:
        _no_missing(item, f"{key}.{part}" if key else str(part))


def _refusal(schema: type[BaseModel], error: Any, origin: Origin, key: str) -> str:
    loc = [str(part) for part in error["loc"]]
    cause = (error.get("ctx") or {}).get("error")
    found = _show(error.get("input"))
    if isinstance(cause, Refusal):
        expected = cause.expected
        loc += cause.key.split(".") if cause.key else []
        found = cause.found if cause.found is not None else found
    elif error["type"] == "extra_forbidden":
        expected = f"one of the settings {sorted(_fields_at(schema, loc[:-1]))}"
        found = "an unknown setting"
    elif error["type"] == "missing":
        expected, found = _walk(schema, loc)[1] or "a value", "nothing (it is missing)"
    else:
        expected = _walk(schema, loc)[1] or error["msg"].removeprefix("Input should be ")
    dotted = ".".join(part for part in [key, *loc] if part)
    where = origin(dotted) if callable(origin) else origin
    return f"{where}: '{dotted}': expected {expected}, found {found}"


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The schema a field holds, directly or as `X | None`."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in get_args(annotation):
        found = _model_in(arg)
        if found is not None:
            return found
    return None


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
        fields = {f.alias or name: f for name, f in model.model_fields.items()}
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


def _fields_at(schema: type[BaseModel], loc: list[str]) -> list[str]:
    model = _walk(schema, loc)[0] if loc else schema
    return [f.alias or name for name, f in (model.model_fields.items() if model else [])]
