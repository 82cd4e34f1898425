"""One typed serializer: records to plain JSON values and back, driven by dataclass fields and
type hints.

Results travel inside pytest reports (also from xdist workers to the controller) and YAML values
become `Expect` fields; both go through here, so no record is written by hand as a dict and read
back by string keys. Rules:

- A dataclass becomes a dict of its fields (``init=False`` fields are not written); decoding
  calls the class with the fields found, so a missing field takes its default, and a key that
  is not a field (a newer writer's, or a derived value) is ignored.
- A class that is not a dataclass but has ``to_dict()`` and a ``from_dict()`` classmethod
  (`ToolCall`, a ``str`` with attributes) is written and read by those.
- ``Path`` becomes a string, tuples and sets become lists, mapping keys become strings,
  ``float('nan')`` and infinities become ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
- A value typed ``Any`` (tool arguments, adapter metadata) is converted best-effort: dates in
  ISO form, anything else unknown as its ``repr``. Decoding leaves it as JSON gave it.

Decoding checks each value against its type hint and raises `ValueError` naming the path
(``runs[0].turns[1].latency_s``) rather than building a record that lies about its types.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, Union

__all__ = ["from_json", "to_json"]

T = TypeVar("T")

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}


def to_json(value: Any) -> Any:
    """``value`` as plain JSON types: dict, list, str, int, float, bool or None."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        # In the constructor's order: positional fields, then keyword-only ones.
        ordered = sorted(dataclasses.fields(value), key=lambda f: bool(f.kw_only))
        return {f.name: to_json(getattr(value, f.name)) for f in ordered if f.init}
    if _is_codec(type(value)):
        return to_json(value.to_dict())
    if isinstance(value, str):
        return str(value)
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): to_json(v) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        items = [to_json(v) for v in value]
        try:
            return sorted(items)
        except TypeError:
            return items
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if hasattr(value, "isoformat"):  # dates, times, datetimes: their ISO form reads best
        return value.isoformat()
    return repr(value)


def from_json(tp: type[T] | Any, data: Any, *, path: str = "") -> T:
    """Rebuild a value of type ``tp`` (a class or a type hint) from what `to_json` produced.

    Raises:
        ValueError: When ``data`` does not fit ``tp``; the message names the path.
    """
    return _decode(tp, data, path)  # type: ignore[no-any-return]


def _is_codec(cls: type) -> bool:
    return (
        not dataclasses.is_dataclass(cls)
        and callable(getattr(cls, "to_dict", None))
        and callable(getattr(cls, "from_dict", None))
    )


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _where(path: str) -> str:
    return path or "(top level)"


def _fail(path: str, expected: str, data: Any) -> ValueError:
    shown = repr(data)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    return ValueError(f"{_where(path)}: expected {expected}, got {type(data).__name__} {shown}")


def _decode(tp: Any, data: Any, path: str) -> Any:
    if tp is Any or isinstance(tp, TypeVar):
        return data
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _decode_union(typing.get_args(tp), data, path)
    if origin is Literal:
        if data in typing.get_args(tp):
            return data
        raise _fail(path, f"one of {list(typing.get_args(tp))!r}", data)
    if origin is not None:
        return _decode_generic(origin, typing.get_args(tp), data, path)
    if tp is type(None):
        if data is None:
            return None
        raise _fail(path, "null", data)
    if isinstance(tp, type):
        if dataclasses.is_dataclass(tp):
            return _decode_dataclass(tp, data, path)
        if _is_codec(tp):
            if not isinstance(data, Mapping):
                raise _fail(path, f"an object for {tp.__name__}", data)
            return tp.from_dict(data)  # type: ignore[attr-defined]
        return _decode_scalar(tp, data, path)
    return data


def _decode_scalar(tp: type, data: Any, path: str) -> Any:
    if tp is bool:
        if isinstance(data, bool):
            return data
        raise _fail(path, "true or false", data)
    if tp is int:
        if isinstance(data, int) and not isinstance(data, bool):
            return data
        raise _fail(path, "an integer", data)
    if tp is float:
        if isinstance(data, int | float) and not isinstance(data, bool):
            return float(data)
        if isinstance(data, str) and data in _NON_FINITE:
            return _NON_FINITE[data]
        raise _fail(path, "a number", data)
    if tp is str:
        if isinstance(data, str):
            return data
        raise _fail(path, "a string", data)
    if issubclass(tp, PurePath):
        if isinstance(data, str | PurePath):
            return Path(data) if tp is PurePath else tp(data)
        raise _fail(path, "a path string", data)
    if isinstance(data, tp):
        return data
    raise _fail(path, tp.__name__, data)


def _accepts(tp: Any, data: Any) -> bool:
    """Whether ``data`` has the JSON shape of ``tp`` (to pick the arm of a union)."""
    if tp is Any:
        return True
    origin = typing.get_origin(tp) or tp
    if origin is Literal:
        return data in typing.get_args(tp)
    if origin is type(None):
        return data is None
    if not isinstance(origin, type):
        return True
    if origin is bool:
        return isinstance(data, bool)
    if origin is int:
        return isinstance(data, int) and not isinstance(data, bool)
    if origin is float:
        return (isinstance(data, int | float) and not isinstance(data, bool)) or (
            isinstance(data, str) and data in _NON_FINITE
        )
    if issubclass(origin, str | PurePath):
        return isinstance(data, str)
    if dataclasses.is_dataclass(origin) or _is_codec(origin) or issubclass(origin, Mapping):
        return isinstance(data, Mapping)
    if issubclass(origin, list | tuple | set | frozenset):
        return isinstance(data, list | tuple)
    return isinstance(data, origin)


def _decode_union(arms: tuple[Any, ...], data: Any, path: str) -> Any:
    if data is None and type(None) in arms:
        return None
    for arm in arms:
        if arm is not type(None) and _accepts(arm, data):
            return _decode(arm, data, path)
    names = " or ".join(getattr(a, "__name__", str(a)) for a in arms)
    raise _fail(path, names, data)


def _decode_generic(origin: Any, args: tuple[Any, ...], data: Any, path: str) -> Any:
    if not isinstance(origin, type):
        return data
    if issubclass(origin, Mapping):
        if not isinstance(data, Mapping):
            raise _fail(path, "an object", data)
        value_type = args[1] if len(args) == 2 else Any
        return {str(k): _decode(value_type, v, f"{path}.{k}") for k, v in data.items()}
    if not issubclass(origin, Sequence | AbstractSet):
        return data
    if not isinstance(data, list | tuple):
        raise _fail(path, "a list", data)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        if args and len(args) != len(data):
            raise _fail(path, f"a list of {len(args)} items", data)
        types_ = args or (Any,) * len(data)
        return tuple(
            _decode(t, v, f"{path}[{i}]") for i, (t, v) in enumerate(zip(types_, data, strict=True))
        )
    item = args[0] if args else Any
    items = [_decode(item, v, f"{path}[{i}]") for i, v in enumerate(data)]
    if origin is tuple:
        return tuple(items)
    if issubclass(origin, AbstractSet):
        return frozenset(items) if origin is frozenset else set(items)
    return items


def _decode_dataclass(cls: type, data: Any, path: str) -> Any:
    if isinstance(data, cls):
        return data
    if not isinstance(data, Mapping):
        raise _fail(path, f"an object for {cls.__name__}", data)
    hints = _hints(cls)
    values: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        where = f"{path}.{f.name}" if path else f.name
        if f.name in data:
            values[f.name] = _decode(hints.get(f.name, Any), data[f.name], where)
        elif f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
            raise ValueError(f"{where}: missing (required by {cls.__name__})")
    return cls(**values)
