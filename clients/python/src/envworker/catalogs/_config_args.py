"""A library's config dataclass as an environment's ``args``: the same fields with the same
defaults, in the wire types the authoring API validates and shows as JSON Schema.

reasoning-gym's configs use types the wire has no word for (tuples, enums, dates, nested
dataclasses) and annotations that disagree with their defaults (``symbols: tuple = "x"``), so a
field's wire type comes from its default value first and its annotation second, and each field
carries the function that turns the client's JSON back into what the config expects.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import types
import typing
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Literal, Optional, Tuple, Union

from ..authoring import ArgsError, _args_fields

_SIMPLE = (bool, int, float, str)


@dataclass(frozen=True)
class ConfigField:
    """One config field as an argument: its wire type hint, its default (JSON) and the conversion
    of a validated wire value into the config's own type."""

    name: str
    wire: Any
    default: Any
    to_config: Callable[[Any], Any]


def _identity(value: Any) -> Any:
    return value


def _optional_inner(hint: Any) -> Any:
    """X of Optional[X] (None when ``hint`` is not Optional of one type)."""
    if typing.get_origin(hint) in (Union, types.UnionType):
        rest = [t for t in typing.get_args(hint) if t is not type(None)]
        if len(rest) == 1 and len(rest) < len(typing.get_args(hint)):
            return rest[0]
    return None


def _hint_wire(hint: Any) -> Any:
    """The wire type of an annotation alone (used when the default is None), or None when the wire
    has no equivalent: simple types, Literal, and lists or tuples of those."""
    if hint in _SIMPLE:
        return hint
    origin = typing.get_origin(hint)
    if origin is Literal and all(isinstance(v, _SIMPLE) for v in typing.get_args(hint)):
        return hint
    if origin in (list, tuple, typing.Sequence, typing.List, typing.Tuple) or hint in (list, tuple):
        targs = [t for t in typing.get_args(hint) if t is not Ellipsis]
        item = _hint_wire(targs[0]) if targs else None
        return List[item] if item is not None else None  # type: ignore[valid-type]
    return None


def _element_wire(items: List[Any]) -> Optional[Tuple[Any, Callable[[Any], Any]]]:
    """(wire type, conversion) shared by every element of a default list, or None."""
    if all(isinstance(v, enum.Enum) for v in items):
        cls = type(items[0])
        if all(type(v) is cls for v in items):
            return Literal[tuple(m.value for m in cls)], cls  # type: ignore[return-value]
        return None
    if all(isinstance(v, str) for v in items):
        return str, _identity
    if all(isinstance(v, bool) for v in items):
        return bool, _identity
    if all(isinstance(v, int) and not isinstance(v, bool) for v in items):
        return int, _identity
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        return float, _identity
    if all(isinstance(v, (list, tuple)) and v for v in items):
        inner = _element_wire([x for v in items for x in v])
        if inner is None:
            return None
        wire, convert = inner
        container = tuple if isinstance(items[0], tuple) else list
        return List[wire], lambda v: container(convert(x) for x in v)  # type: ignore[valid-type]
    return None


def _iso(cls: Any, name: str) -> Callable[[Any], Any]:
    def parse(value: str) -> Any:
        try:
            return cls.fromisoformat(value)
        except ValueError:
            example = "2024-12-31" if cls is datetime.date else "23:59:59"
            raise ArgsError(f"{name}: {value!r} is not an ISO {cls.__name__} (e.g. {example!r})") from None

    return parse


def field_for(name: str, hint: Any, default: Any) -> Optional[ConfigField]:
    """The argument for one config field, or None when it has no wire form (a nested dataclass)."""
    if default is None:
        inner = _optional_inner(hint)
        wire = _hint_wire(inner if inner is not None else hint)
        if wire is None:
            return None
        convert: Callable[[Any], Any] = _identity
        if typing.get_origin(inner if inner is not None else hint) is tuple:
            convert = lambda v: None if v is None else tuple(v)  # noqa: E731
        return ConfigField(name, Optional[wire], None, convert)
    if isinstance(default, enum.Enum):
        cls = type(default)
        return ConfigField(name, Literal[tuple(m.value for m in cls)], default.value, cls)
    if isinstance(default, _SIMPLE):
        if typing.get_origin(hint) is Literal:
            return ConfigField(name, hint, default, _identity)
        # An int default of a float field is still a float field (0 for a probability).
        wire = float if hint is float and not isinstance(default, bool) else type(default)
        return ConfigField(name, wire, default, _identity)
    if isinstance(default, (datetime.date, datetime.time)):  # datetime.datetime is a date too
        cls = type(default)
        return ConfigField(name, str, default.isoformat(), _iso(cls, name))
    if isinstance(default, (list, tuple)):
        container = tuple if isinstance(default, tuple) else list
        if not default:
            wire = _hint_wire(hint)
            return ConfigField(name, wire, [], container) if wire is not None else None
        found = _element_wire(list(default))
        if found is None:
            return None
        item, convert = found
        return ConfigField(name, List[item], [_to_json(v) for v in default], lambda v: container(convert(x) for x in v))  # type: ignore[valid-type]
    return None


def _to_json(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (list, tuple)):
        return [_to_json(v) for v in value]
    return value


def config_fields(config_cls: type, exclude: Dict[str, str]) -> Tuple[List[ConfigField], Dict[str, str]]:
    """The arguments of ``config_cls`` (a dataclass whose fields all have defaults), and the fields
    left at their defaults with why: those named in ``exclude`` and those with no wire form."""
    out: List[ConfigField] = []
    fixed: Dict[str, str] = {}
    for name, hint, default in _args_fields(config_cls):  # the authoring API's reading of a dataclass
        if name in exclude:
            fixed[name] = exclude[name]
            continue
        arg = field_for(name, hint, default)
        if arg is None:
            fixed[name] = f"a {type(default).__name__} (no JSON form): its default is used"
        else:
            out.append(arg)
    return out, fixed


def args_class(class_name: str, fields: List[ConfigField], check: Callable[[Any], None], extra: Tuple[Tuple[str, Any, Any], ...] = ()) -> type:
    """A dataclass of ``fields`` (every one with its default) whose construction runs ``check`` on
    the new instance: the authoring API builds args with the client's values, so a config the
    library refuses is the client's ArgsError (a 400), not a failure later in the episode.
    ``extra`` are arguments of the catalog's own, ``(name, wire type, default)``, after the
    config's; :func:`config_kwargs` leaves them out of the config."""

    def __post_init__(self: Any) -> None:
        check(self)

    clash = {f.name for f in fields} & {name for name, _, _ in extra}
    if clash:
        raise ValueError(f"{class_name}: the config has a field named {', '.join(sorted(clash))}, an argument of the catalog's own")
    spec: List[Any] = []
    for f in fields:
        default = f.default
        if isinstance(default, list):
            spec.append((f.name, f.wire, dataclasses.field(default_factory=lambda d=default: list(d))))
        else:
            spec.append((f.name, f.wire, dataclasses.field(default=default)))
    spec += [(name, wire, dataclasses.field(default=default)) for name, wire, default in extra]
    return dataclasses.make_dataclass(class_name, spec, namespace={"__post_init__": __post_init__})


def config_kwargs(args: Any, fields: List[ConfigField]) -> Dict[str, Any]:
    """The config's keyword arguments from validated ``args``."""
    return {f.name: f.to_config(getattr(args, f.name)) for f in fields}
