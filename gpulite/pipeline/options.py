"""Convert a node's options mapping (from Python or YAML) into its calculator's options dataclass."""

from __future__ import annotations

import dataclasses
import typing
from typing import Any

from gpulite.errors import GraphConfigError, brief
from gpulite.pipeline.ports import runtime_types, type_name


def _coerce(value: Any, tp: Any, where: str) -> Any:
    allowed = runtime_types(tp)
    if allowed is None:
        return value
    if isinstance(value, list) and tuple in allowed:  # YAML has no tuples
        value = tuple(value)
    if isinstance(value, allowed) and (bool in allowed or not isinstance(value, bool)):
        return value
    raise GraphConfigError(f"{where}: expected {type_name(tp)}, got {type(value).__name__} {brief(value)}")


def make_options(cls: type | None, raw: Any, where: str) -> Any:
    """Return an instance of the dataclass ``cls`` built from ``raw`` (mapping, instance or None).

    Raises :class:`GraphConfigError` naming ``where`` and the key for unknown keys, values of the
    wrong type and errors raised by the dataclass itself.
    """
    if cls is None:
        if raw:
            raise GraphConfigError(f"{where}: the calculator takes no options, got {brief(raw)}")
        return None
    if isinstance(raw, cls):
        return raw
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise GraphConfigError(f"{where}: options must be a mapping or a {cls.__name__}, got {type(raw).__name__}")
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    unknown = set(raw) - set(fields)
    if unknown:
        raise GraphConfigError(f"{where}: unknown option(s) {brief(sorted(map(str, unknown)))} for {cls.__name__}; "
                               f"known: {sorted(fields)}")
    try:
        hints = typing.get_type_hints(cls)
    except Exception:  # unresolved forward references: leave values unchecked
        hints = {}
    values = {k: _coerce(v, hints.get(k, Any), f"{where}: option {k!r}") for k, v in raw.items()}
    try:
        return cls(**values)
    except (TypeError, ValueError) as e:
        raise GraphConfigError(f"{where}: bad options for {cls.__name__}: {e}") from None
