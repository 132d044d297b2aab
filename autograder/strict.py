"""Runs on both sides of the sandbox and in the instructor's tools: the one strict reader of typed data that crosses a
border, from parsed JSON or TOML into the dataclasses that declare it (protocol.py's messages, outcome.py's results
files, limits.py's limits).

    read(value, kind, where, error)          `value` as the annotation `kind`, or `error` naming `where`
    fields_of(cls, obj, where, error)        the fields of dataclass `cls` from the object `obj`, each read so

What is read is exactly what is declared: bool is never taken for a number (an int is a float), a tuple or a list is a
JSON list (a tuple comes back a tuple; one of fixed length, `tuple[str, int]`, holds exactly those items), an enum is
the value of one of its members (it comes back the member), a dataclass is an object of exactly its fields (it comes
back built), `Any` is anything. Standard library only: the sandboxed side reads its messages with it before any of the
student's code runs.
"""
from __future__ import annotations

import dataclasses
import enum
import functools
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin, get_type_hints


def _shown(value: object) -> str:
    """What came instead, for a message: its type, and at most 40 characters of a string (never a hostile tree)."""
    return repr(value[:40]) if type(value) is str else type(value).__name__


def _name(kind: Any) -> str:
    return kind.__name__ if isinstance(kind, type) and get_origin(kind) is None else str(kind).replace("typing.", "")


@functools.cache
def _shape(kind: Any) -> tuple[str, Any]:
    """How `read` reads the annotation `kind`: (the way, what it needs), worked out once per annotation."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return "any", None
    if origin in (Union, UnionType):
        return "union", args
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return "enum", {(type(m.value), m.value): m for m in kind}
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return "dataclass", kind
    if origin is tuple and args and args[-1] is not Ellipsis:
        return "fixed", args
    if origin in (tuple, list):
        return "sequence", (origin, args[0] if args else Any)
    if origin is dict:
        return "dict", args or (Any, Any)
    return "exact", (int, float) if kind is float else (kind,)


def read(value: object, kind: Any, where: str, error: type[Exception]) -> Any:
    """`value` (parsed JSON or TOML) as the annotation `kind` (see the module docstring); `error` naming `where` and
    what came instead when it is not one."""
    way, needs = _shape(kind)
    return _READERS[way](value, kind, needs, where, error)


def _wrong(value: object, kind: Any, where: str, error: type[Exception]) -> Exception:
    return error(f"{where}: expected {_name(kind)}, got {_shown(value)}")


def _exact(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    if type(value) not in needs:
        raise _wrong(value, kind, where, error)
    return value


def _union(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    if value is None and NoneType in needs:
        return None
    for arm in needs:
        try:
            return read(value, arm, where, error)
        except error:
            continue
    raise _wrong(value, kind, where, error)


def _enum(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    member = needs.get((type(value), value)) if isinstance(value, (str, int, float)) else None
    if member is None:
        raise error(f"{where}: expected one of {sorted(str(k[1]) for k in needs)}, got {_shown(value)}")
    return member


def _fixed(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    if type(value) is not list or len(value) != len(needs):
        raise _wrong(value, kind, where, error)
    return tuple(read(v, item, f"{where}[{i}]", error) for i, (v, item) in enumerate(zip(value, needs)))


def _sequence(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    origin, item = needs
    if type(value) is not list:
        raise _wrong(value, kind, where, error)
    items = [read(v, item, f"{where}[{i}]", error) for i, v in enumerate(value)]
    return tuple(items) if origin is tuple else items


def _dict(value: object, kind: Any, needs: Any, where: str, error: type[Exception]) -> Any:
    if type(value) is not dict:
        raise _wrong(value, kind, where, error)
    keys, values = needs
    return {read(k, keys, where, error): read(v, values, f"{where}[{k!r}]", error) for k, v in value.items()}


# How each shape of annotation (_shape) is read.
_READERS = {"exact": _exact, "any": lambda value, *_: value, "union": _union, "enum": _enum,
            "dataclass": lambda value, kind, needs, where, error: needs(**fields_of(needs, value, where, error)),
            "fixed": _fixed, "sequence": _sequence, "dict": _dict}


@functools.cache
def _hints(cls: type) -> tuple[dict[str, Any], frozenset[str], frozenset[str]]:
    """(each field's annotation, the fields, those with a default) of dataclass `cls`."""
    fields = dataclasses.fields(cls)
    return (get_type_hints(cls), frozenset(f.name for f in fields),
            frozenset(f.name for f in fields if f.default is not dataclasses.MISSING
                      or f.default_factory is not dataclasses.MISSING))


def fields_of(cls: type, obj: object, where: str, error: type[Exception],
              optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields of dataclass `cls` from the object `obj`, each read as its annotation: every field without a default
    is required, `optional` ones (with a default) may be missing, no other key is allowed."""
    if type(obj) is not dict:
        raise error(f"{where}: expected an object, got {_shown(obj)}")
    hints, declared, defaulted = _hints(cls)
    missing = declared - set(obj) - (optional & defaulted)
    extra = set(obj) - declared
    if missing or extra:
        raise error(f"{where}: missing {sorted(missing)}, unexpected {sorted(map(str, extra))}")
    return {name: read(value, hints[name], f"{where}.{name}", error) for name, value in obj.items()}
