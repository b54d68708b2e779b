"""Port names, MediaPipe stream specs (``"TAG:name"``, ``"TAG:1:name"``) and payload-type checks.

A port is a TAG, optionally indexed: ``"TENSORS"`` is ``"TENSORS:0"``; ``"TENSORS:1"`` is the
second port of a repeated tag. A calculator that declares ``"TENSORS"`` accepts every index;
all indices share the declared type.
"""

from __future__ import annotations

import re
import types
import typing
from typing import Any

from gpulite.errors import brief

_TAG = re.compile(r"^[A-Z][A-Z0-9_]*$")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-/]*$")


def canonical_port(port: str) -> str:
    """``"TAG"``/``"TAG:0"`` -> ``"TAG"``, ``"TAG:2"`` -> ``"TAG:2"``; raises ``ValueError``."""
    tag, _, index = port.partition(":")
    if not _TAG.match(tag) or (index and not index.isdigit()):
        raise ValueError(f"port must be TAG or TAG:index with TAG in UPPER_CASE, got {brief(port)}")
    return tag if not index or int(index) == 0 else f"{tag}:{int(index)}"


def port_tag(port: str) -> str:
    return port.partition(":")[0]


def parse_stream_spec(spec: str, *, tagged: bool) -> tuple[str | None, str]:
    """Split ``"TAG:name"``, ``"TAG:1:name"`` or ``"name"`` into (port or None, stream name)."""
    if not isinstance(spec, str):
        raise ValueError(f"stream spec must be a string like 'TAG:name', got {type(spec).__name__} {brief(spec)}")
    parts = spec.split(":")
    if len(parts) == 1:
        port, name = None, parts[0]
    elif len(parts) == 2:
        port, name = canonical_port(parts[0]), parts[1]
    elif len(parts) == 3:
        port, name = canonical_port(f"{parts[0]}:{parts[1]}"), parts[2]
    else:
        raise ValueError(f"stream spec must be 'name', 'TAG:name' or 'TAG:index:name', got {brief(spec)}")
    check_stream_name(name)
    if tagged and port is None:
        raise ValueError(f"stream spec {brief(spec)} needs a TAG: prefix naming the port, e.g. {brief('IN:' + name)}")
    return port, name


def check_stream_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"stream name must be an identifier-like string, got {brief(name)}")
    return name


def declared_type(declared: dict[str, Any], port: str) -> Any:
    """The declared type of ``port`` (a repeated tag's type for indexed ports); KeyError if undeclared."""
    if port in declared:
        return declared[port]
    return declared[port_tag(port)]


def runtime_types(tp: Any) -> tuple[type, ...] | None:
    """Classes to ``isinstance``-check against, or None when ``tp`` accepts anything."""
    if tp is Any or tp is object:
        return None
    if isinstance(tp, tuple):
        out: list[type] = []
        for t in tp:
            r = runtime_types(t)
            if r is None:
                return None
            out.extend(r)
        return tuple(out)
    origin = typing.get_origin(tp)
    if origin is typing.Union or origin is types.UnionType:
        return runtime_types(typing.get_args(tp))
    if origin is not None:
        return runtime_types(origin)
    if tp is None:
        return (type(None),)
    if isinstance(tp, type):
        return (float, int) if tp is float else ((complex, float, int) if tp is complex else (tp,))
    return None  # TypeVar, Protocol-like objects...: not checked


def types_compatible(produced: Any, consumed: Any) -> bool:
    """True when every payload allowed by ``produced`` may be accepted by ``consumed``."""
    p, c = runtime_types(produced), runtime_types(consumed)
    if p is None or c is None:
        return True
    return all(any(issubclass(pt, ct) for ct in c) for pt in p)


def type_name(tp: Any) -> str:
    if isinstance(tp, tuple):
        return " | ".join(type_name(t) for t in tp)
    return getattr(tp, "__name__", None) or repr(tp).replace("typing.", "")
