"""Runs on both sides of the sandbox and in the instructor's tools: the one strict reader of typed data that crosses a
border, from parsed JSON or TOML into the dataclasses that declare it (protocol.py's messages, outcome.py's results
files, limits.py's limits).

    read(value, kind, where, error)          `value` as the annotation `kind`, or `error` naming `where`
    fields_of(cls, obj, where, error)        the fields of dataclass `cls` from the object `obj`, each read so

What is read is exactly what is declared: bool is never taken for a number (an int is a float), a tuple or a list is a
JSON list (a tuple comes back a tuple), an enum is the value of one of its members (it comes back the member), a
dataclass is an object of exactly its fields (it comes back built), `Any` is anything. Standard library only: the
sandboxed side reads its messages with it before any of the student's code runs.
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


def read(value: object, kind: Any, where: str, error: type[Exception]) -> Any:
    """`value` (parsed JSON or TOML) as the annotation `kind` (see the module docstring); `error` naming `where` and
    what came instead when it is not one."""
    origin, args = get_origin(kind), get_args(kind)
    if kind is Any:
        return value
    if origin in (Union, UnionType):
        for arm in args:
            try:
                return read(value, arm, where, error)
            except error:
                continue
        raise error(f"{where}: expected {_name(kind)}, got {_shown(value)}")
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        if isinstance(value, (str, int, float)) and type(value) is not bool:
            for member in kind:
                if type(value) is type(member.value) and value == member.value:
                    return member
        raise error(f"{where}: expected one of {sorted(str(m.value) for m in kind)}, got {_shown(value)}")
    if dataclasses.is_dataclass(kind) and isinstance(kind, type):
        return kind(**fields_of(kind, value, where, error))
    if origin in (tuple, list):
        if type(value) is not list:
            raise error(f"{where}: expected {_name(kind)}, got {_shown(value)}")
        items = [read(v, args[0], f"{where}[{i}]", error) for i, v in enumerate(value)] if args else list(value)
        return tuple(items) if origin is tuple else items
    if origin is dict:
        if type(value) is not dict:
            raise error(f"{where}: expected {_name(kind)}, got {_shown(value)}")
        return {read(k, args[0], where, error): read(v, args[1], f"{where}[{k!r}]", error) for k, v in value.items()}
    exact = (int, float) if kind is float else (NoneType,) if kind is NoneType else (kind,)
    if type(value) not in exact:
        raise error(f"{where}: expected {_name(kind)}, got {_shown(value)}")
    return value


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return get_type_hints(cls)


def fields_of(cls: type, obj: object, where: str, error: type[Exception],
              optional: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The fields of dataclass `cls` from the object `obj`, each read as its annotation: every field without a default
    is required, `optional` ones (with a default) may be missing, no other key is allowed."""
    if type(obj) is not dict:
        raise error(f"{where}: expected an object, got {_shown(obj)}")
    hints = _hints(cls)
    declared = {f.name for f in dataclasses.fields(cls)}
    defaulted = {f.name for f in dataclasses.fields(cls)
                 if f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING}
    missing = declared - set(obj) - (optional & defaulted)
    extra = set(obj) - declared
    if missing or extra:
        raise error(f"{where}: missing {sorted(missing)}, unexpected {sorted(map(str, extra))}")
    return {name: read(value, hints[name], f"{where}.{name}", error) for name, value in obj.items()}
