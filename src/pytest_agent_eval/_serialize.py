"""One typed serializer: records to plain JSON values and back, driven by dataclass fields and
type hints.

Results travel inside pytest reports (also from xdist workers to the controller) and YAML values
become `Expect` fields; both go through here, so no record is written by hand as a dict and read
back by string keys. Rules:

- A dataclass becomes a dict of its fields, in constructor order (``init=False`` fields are not
  written); decoding calls the class with the fields found, so a missing field takes its
  default, and a key that is not a field (a newer writer's, or a derived value) is ignored.
- A class that is not a dataclass but has ``to_dict()`` and a ``from_dict()`` classmethod
  (`ToolCall`, a ``str`` with attributes) is written and read by those.
- ``Path`` becomes a string, tuples and sets become lists, mapping keys become strings,
  ``float('nan')`` and infinities become ``"NaN"``, ``"Infinity"``, ``"-Infinity"``.
- Text is written as UTF-8 can encode it: a lone surrogate becomes U+FFFD (`clean_text`).
- A value typed ``Any`` (tool arguments, adapter metadata) is converted best-effort: dates in
  ISO form, anything else unknown as its ``repr``. Decoding leaves it as JSON gave it.

Decoding checks each value against its type hint and raises `ValueError` naming the path
(``runs[0].turns[1].latency_s``) rather than building a record that lies about its types.

Each type gets its encoder and each type hint its decoder once, on first use (results hold
thousands of values, and the reports of a big suite are decoded on the controller).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from pathlib import Path, PurePath
from typing import Any, Literal, TypeVar, Union

from ._sanitize import clean_text

__all__ = ["from_json", "to_json"]

T = TypeVar("T")

_NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}

Encoder = Callable[[Any], Any]
Decoder = Callable[[Any], Any]


# --------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """``value`` as plain JSON types: dict, list, str, int, float, bool or None."""
    cls = type(value)
    if cls is str:
        # A lone surrogate cannot be encoded: it would break a report writer or xdist.
        return clean_text(value)
    if cls is int or cls is bool or value is None:
        return value
    encoder = _ENCODERS.get(cls)
    if encoder is None:
        encoder = _ENCODERS[cls] = _encoder_for(cls)
    return encoder(value)


_ENCODERS: dict[type, Encoder] = {}


def _is_codec(cls: type) -> bool:
    return (
        not dataclasses.is_dataclass(cls)
        and callable(getattr(cls, "to_dict", None))
        and callable(getattr(cls, "from_dict", None))
    )


def _init_fields(cls: type) -> list[dataclasses.Field[Any]]:
    """The fields the constructor takes, in its order: positional ones, then keyword-only."""
    fields = [f for f in dataclasses.fields(cls) if f.init]
    return sorted(fields, key=lambda f: bool(f.kw_only))


def _encode_float(value: float) -> Any:
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _encode_unknown(value: Any) -> Any:
    if hasattr(value, "isoformat"):  # dates, times, datetimes: their ISO form reads best
        return clean_text(str(value.isoformat()))
    return clean_text(repr(value))


def _encode_set(value: AbstractSet[Any]) -> list[Any]:
    items = [to_json(v) for v in value]
    try:
        return sorted(items)
    except TypeError:
        return items


def _encoder_for(cls: type) -> Encoder:
    if issubclass(cls, bool):
        return bool
    if issubclass(cls, int):
        return int
    if issubclass(cls, float):
        return _encode_float
    if dataclasses.is_dataclass(cls):
        names = tuple(f.name for f in _init_fields(cls))
        return lambda value: {name: to_json(getattr(value, name)) for name in names}
    if _is_codec(cls):
        return lambda value: to_json(value.to_dict())
    if issubclass(cls, str | PurePath):
        return lambda value: clean_text(str(value))
    if issubclass(cls, Mapping):
        return lambda value: {clean_text(str(k)): to_json(v) for k, v in value.items()}
    if issubclass(cls, AbstractSet):
        return _encode_set
    if issubclass(cls, list | tuple):
        return lambda value: [to_json(v) for v in value]
    return _encode_unknown


# --------------------------------------------------------------------------------------------
# Decoding
# --------------------------------------------------------------------------------------------


class _Mismatch(Exception):
    """A value that does not fit its type; containers add their part of the path on the way up."""

    def __init__(self, expected: str, data: Any) -> None:
        super().__init__(expected)
        self.expected = expected
        self.data = data
        self.path: list[str] = []

    def message(self) -> str:
        where = "".join(self.path).lstrip(".") or "(top level)"
        if self.expected.startswith("missing"):
            return f"{where}: {self.expected}"
        shown = repr(self.data)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        return f"{where}: expected {self.expected}, got {type(self.data).__name__} {shown}"


def from_json(tp: type[T] | Any, data: Any, *, path: str = "") -> T:
    """Rebuild a value of type ``tp`` (a class or a type hint) from what `to_json` produced.

    Args:
        tp: The class or type hint to build.
        data: Plain JSON data.
        path: Where ``data`` sits, prefixed to the path in error messages.

    Raises:
        ValueError: When ``data`` does not fit ``tp``; the message names the path.
    """
    try:
        return _decoder(tp)(data)  # type: ignore[no-any-return, arg-type]
    except _Mismatch as exc:
        if path:
            exc.path.insert(0, path if path.startswith("[") else "." + path)
        raise ValueError(exc.message()) from None


@functools.cache
def _decoder(tp: Any) -> Decoder:
    """The decoder of one type hint, built once."""
    if tp is Any or isinstance(tp, TypeVar):
        return _identity
    origin = typing.get_origin(tp)
    if origin is Union or origin is types.UnionType:
        return _union_decoder(typing.get_args(tp))
    if origin is Literal:
        return _literal_decoder(typing.get_args(tp))
    if origin is not None:
        return _generic_decoder(origin, typing.get_args(tp))
    if tp is type(None):
        return _scalar_decoder(lambda d: d is None, "null")
    if not isinstance(tp, type):
        return _identity
    if dataclasses.is_dataclass(tp):
        return _dataclass_decoder(tp)
    if _is_codec(tp):
        return _codec_decoder(tp)
    return _class_decoder(tp)


def _identity(data: Any) -> Any:
    return data


def _scalar_decoder(accepts: Callable[[Any], bool], expected: str) -> Decoder:
    def decode(data: Any) -> Any:
        if accepts(data):
            return data
        raise _Mismatch(expected, data)

    return decode


def _is_int(data: Any) -> bool:
    return isinstance(data, int) and not isinstance(data, bool)


def _is_number(data: Any) -> bool:
    return isinstance(data, int | float) and not isinstance(data, bool)


def _decode_float(data: Any) -> float:
    if _is_number(data):
        return float(data)
    if isinstance(data, str) and data in _NON_FINITE:
        return _NON_FINITE[data]
    raise _Mismatch("a number", data)


def _class_decoder(tp: type) -> Decoder:
    if tp is bool:
        return _scalar_decoder(lambda d: isinstance(d, bool), "true or false")
    if tp is int:
        return _scalar_decoder(_is_int, "an integer")
    if tp is float:
        return _decode_float
    if tp is str:
        return _scalar_decoder(lambda d: isinstance(d, str), "a string")
    if issubclass(tp, PurePath):
        make = Path if tp is PurePath else tp

        def decode_path(data: Any) -> Any:
            if isinstance(data, str | PurePath):
                return make(data)
            raise _Mismatch("a path string", data)

        return decode_path
    return _scalar_decoder(lambda d: isinstance(d, tp), tp.__name__)


def _literal_decoder(values: tuple[Any, ...]) -> Decoder:
    def decode(data: Any) -> Any:
        if data in values:
            return data
        raise _Mismatch(f"one of {list(values)!r}", data)

    return decode


def _codec_decoder(tp: type) -> Decoder:
    def decode(data: Any) -> Any:
        if not isinstance(data, Mapping):
            raise _Mismatch(f"an object for {tp.__name__}", data)
        return tp.from_dict(data)  # type: ignore[attr-defined]

    return decode


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
        return _is_int(data)
    if origin is float:
        return _is_number(data) or (isinstance(data, str) and data in _NON_FINITE)
    if issubclass(origin, str | PurePath):
        return isinstance(data, str)
    if dataclasses.is_dataclass(origin) or _is_codec(origin) or issubclass(origin, Mapping):
        return isinstance(data, Mapping)
    if issubclass(origin, list | tuple | AbstractSet):
        return isinstance(data, list | tuple)
    return isinstance(data, origin)


def _union_decoder(arms: tuple[Any, ...]) -> Decoder:
    optional = type(None) in arms
    choices = [(arm, _decoder(arm)) for arm in arms if arm is not type(None)]
    names = " or ".join(getattr(a, "__name__", str(a)) for a in arms)
    if optional and len(choices) == 1:  # X | None, the common case: no shape test needed
        decode_arm = choices[0][1]

        def decode_optional(data: Any) -> Any:
            if data is None:
                return None
            try:
                return decode_arm(data)
            except _Mismatch as exc:
                if exc.path:  # deeper inside the value: keep that message
                    raise
                raise _Mismatch(names, data) from None

        return decode_optional

    def decode(data: Any) -> Any:
        if data is None and optional:
            return None
        for arm, decode_arm in choices:
            if _accepts(arm, data):
                return decode_arm(data)
        raise _Mismatch(names, data)

    return decode


def _items(decode_item: Decoder, data: Any) -> list[Any]:
    if not isinstance(data, list | tuple):
        raise _Mismatch("a list", data)
    out = []
    for index, value in enumerate(data):
        try:
            out.append(decode_item(value))
        except _Mismatch as exc:
            exc.path.insert(0, f"[{index}]")
            raise
    return out


def _generic_decoder(origin: Any, args: tuple[Any, ...]) -> Decoder:
    if not isinstance(origin, type):
        return _identity
    if issubclass(origin, Mapping):
        decode_value = _decoder(args[1]) if len(args) == 2 else _identity

        def decode_mapping(data: Any) -> Any:
            if not isinstance(data, Mapping):
                raise _Mismatch("an object", data)
            out = {}
            for key, value in data.items():
                try:
                    out[str(key)] = decode_value(value)
                except _Mismatch as exc:
                    exc.path.insert(0, f".{key}")
                    raise
            return out

        return decode_mapping
    if not issubclass(origin, Sequence | AbstractSet):
        return _identity
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        decoders = [_decoder(a) for a in args]

        def decode_fixed(data: Any) -> Any:
            if not isinstance(data, list | tuple) or len(data) != len(decoders):
                raise _Mismatch(f"a list of {len(decoders)} items", data)
            out = []
            for index, (decode_item, value) in enumerate(zip(decoders, data, strict=True)):
                try:
                    out.append(decode_item(value))
                except _Mismatch as exc:
                    exc.path.insert(0, f"[{index}]")
                    raise
            return tuple(out)

        return decode_fixed
    decode_item = _decoder(args[0]) if args else _identity
    if origin is tuple:
        return lambda data: tuple(_items(decode_item, data))
    if issubclass(origin, AbstractSet):
        make = frozenset if origin is frozenset else set
        return lambda data: make(_items(decode_item, data))
    return lambda data: _items(decode_item, data)


def _dataclass_decoder(cls: type) -> Decoder:
    hints = typing.get_type_hints(cls)
    fields = [
        (
            f.name,
            _decoder(hints.get(f.name, Any)),
            f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING,
        )
        for f in _init_fields(cls)
    ]

    def decode(data: Any) -> Any:
        if isinstance(data, cls):
            return data
        if not isinstance(data, Mapping):
            raise _Mismatch(f"an object for {cls.__name__}", data)
        values: dict[str, Any] = {}
        for name, decode_field, required in fields:
            if name in data:
                try:
                    values[name] = decode_field(data[name])
                except _Mismatch as exc:
                    exc.path.insert(0, f".{name}")
                    raise
            elif required:
                error = _Mismatch(f"missing (required by {cls.__name__})", None)
                error.path.append(f".{name}")
                raise error
        return cls(**values)

    return decode
