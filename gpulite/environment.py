"""Typed flags, TF.js ``tf.env()`` style: ``gpulite.env().set("debug", True)``.

Every flag has a type, a default and an environment variable ``GPULITE_<NAME>``. A value
given with :meth:`Environment.set` wins over the environment variable, which wins over the
default. Environment variables are read once, on first use, and again after
:meth:`Environment.reset` (as TF.js reads its URL flags once).

========================  ===========  ========  ==========================================
flag                      type         default   meaning
========================  ===========  ========  ==========================================
``precision``             str          fp32      ``fp32`` or ``fp16``: WebGPU precision asked
                                                 for when an Interpreter does not say
``debug``                 bool         False     log every kernel: shapes, time, memory
``prod``                  bool         False     skip argument validation and NaN checks
``check_nans``            bool         False     raise ``NaNError`` when a kernel makes NaN
``pipeline_cache_dir``    str or None  None      directory for compiled pipelines (reserved:
                                                 wgpu-py exposes no pipeline cache yet)
``num_threads``           int or None  None      CPU threads when an Interpreter does not say
``auto_measure``          bool         True      ``auto`` for models and solutions: time each
                                                 backend on first use, keep the fastest
                                                 (gpulite.measure)
========================  ===========  ========  ==========================================
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gpulite.errors import FlagError

log = logging.getLogger(__name__)

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise ValueError(f"expected one of {sorted(_TRUE | _FALSE - {''})}")


def _parse_optional_int(text: str) -> int | None:
    return None if text.strip() == "" else int(text)


def _parse_optional_str(text: str) -> str | None:
    return text or None


@dataclass(frozen=True)
class Flag:
    """One flag: its type (for messages), default, checker and environment parser."""

    name: str
    type_name: str
    default: Any
    doc: str
    check: Callable[[Any], Any]  # returns the normalised value or raises TypeError/ValueError
    parse: Callable[[str], Any]

    @property
    def env_var(self) -> str:
        return f"GPULITE_{self.name.upper()}"


def _check_bool(v: Any) -> bool:
    if not isinstance(v, bool):
        raise TypeError(f"expected a bool, got {type(v).__name__} {v!r}")
    return v


def _check_precision(v: Any) -> str:
    if not isinstance(v, str):
        raise TypeError(f"expected a str, got {type(v).__name__} {v!r}")
    if v not in ("fp32", "fp16"):
        raise ValueError(f"expected 'fp32' or 'fp16', got {v!r}")
    return v


def _check_choice(*choices: str) -> Callable[[Any], str]:
    def check(v: Any) -> str:
        if not isinstance(v, str):
            raise TypeError(f"expected a str, got {type(v).__name__} {v!r}")
        if v not in choices:
            raise ValueError(f"expected one of {list(choices)}, got {v!r}")
        return v
    return check


def _check_threads(v: Any) -> int | None:
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise TypeError(f"expected an int >= 1 or None, got {type(v).__name__} {v!r}")
    if v < 1:
        raise ValueError(f"expected an int >= 1 or None, got {v}")
    return v


def _check_dir(v: Any) -> str | None:
    if v is None:
        return None
    if not isinstance(v, (str, os.PathLike)):
        raise TypeError(f"expected a path (str or os.PathLike) or None, got {type(v).__name__} {v!r}")
    return os.fspath(v)


FLAGS: dict[str, Flag] = {f.name: f for f in (
    Flag("precision", "'fp32' | 'fp16'", "fp32", "WebGPU precision asked for when an Interpreter does not say",
         _check_precision, str.strip),
    Flag("debug", "bool", False, "log every kernel with its shapes, time and memory", _check_bool, _parse_bool),
    Flag("prod", "bool", False, "skip argument validation and NaN checks", _check_bool, _parse_bool),
    Flag("check_nans", "bool", False, "raise NaNError when a kernel's output holds NaN", _check_bool, _parse_bool),
    Flag("pipeline_cache_dir", "str | None", None,
         "directory for compiled pipelines (reserved: wgpu-py exposes no pipeline cache yet)",
         _check_dir, _parse_optional_str),
    Flag("cpu_jit", "bool", True, "CPU backend: run its hottest loops compiled from C (off: numpy only)",
         _check_bool, _parse_bool),
    Flag("num_threads", "int >= 1 | None", None, "CPU threads when an Interpreter does not say",
         _check_threads, _parse_optional_int),
    Flag("auto_measure", "bool", True,
         "backend auto (Interpreter and solutions): time each usable backend on first use and keep the fastest "
         "(off: rank)",
         _check_bool, _parse_bool),
    Flag("webgpu_encode", "'native' | 'python'", "native",
         "how the WebGPU backend encodes and submits an invoke: two calls of a C helper compiled on first use "
         "(python without a C compiler), or the same calls to wgpu-native's C API from Python",
         _check_choice("native", "python"), str.strip),
    Flag("webgpu_quantized", "'float' | 'exact'", "float",
         "how the WebGPU backend runs quantized models when an Interpreter does not say",
         _check_choice("float", "exact"), str.strip),
)}


def _valid() -> str:
    return ", ".join(f"{f.name} ({f.type_name})" for f in FLAGS.values())


def _flag(name: Any) -> Flag:
    flag = FLAGS.get(name) if isinstance(name, str) else None
    if flag is None:
        raise FlagError(f"unknown flag {name!r}; valid flags: {_valid()}")
    return flag


class Environment:
    """The process-wide flags; get it with :func:`env`."""

    def __init__(self) -> None:
        self._set: dict[str, Any] = {}
        self._from_env: dict[str, Any] | None = None
        self._lock = threading.Lock()
        self._values: dict[str, Any] = {}

    def _read_env(self) -> dict[str, Any]:
        out = {}
        for f in FLAGS.values():
            text = os.environ.get(f.env_var)
            if text is None:
                continue
            try:
                out[f.name] = f.check(f.parse(text))
            except (TypeError, ValueError) as e:
                raise FlagError(f"environment variable {f.env_var}={text!r} is not a valid {f.type_name}: {e}; "
                                f"valid flags: {_valid()}") from None
        return out

    def _resolve(self) -> dict[str, Any]:
        if self._from_env is None:
            with self._lock:
                if self._from_env is None:
                    self._from_env = self._read_env()
                    self._values = {n: self._set.get(n, self._from_env.get(n, f.default)) for n, f in FLAGS.items()}
        return self._values

    def get(self, name: str) -> Any:
        """The value of flag ``name``.

        Raises
        ------
        FlagError
            For an unknown name (the message lists the valid flags), or an environment
            variable that does not parse.
        """
        values = self._resolve()
        try:
            return values[name]
        except (KeyError, TypeError):
            raise FlagError(f"unknown flag {name!r}; valid flags: {_valid()}") from None

    def set(self, name: str, value: Any) -> None:
        """Set flag ``name`` for this process (wins over ``GPULITE_<NAME>``).

        Raises
        ------
        FlagError
            For an unknown name or a value of the wrong type or range; the message says what
            was expected and lists the valid flags.
        """
        flag = _flag(name)
        try:
            value = flag.check(value)
        except (TypeError, ValueError) as e:
            raise FlagError(f"flag {name!r}: {e}; valid flags: {_valid()}") from None
        self._resolve()
        with self._lock:
            self._set[name] = value
            self._values[name] = value

    def reset(self) -> None:
        """Forget every :meth:`set`; the ``GPULITE_*`` environment variables are read again on next use."""
        with self._lock:
            self._set.clear()
            self._from_env = None

    def flags(self) -> dict[str, Any]:
        """Every flag's current value (TF.js ``env().getFlags()``)."""
        return dict(self._resolve())

    def source(self, name: str) -> str:
        """Where the value of ``name`` comes from: ``"set"``, ``"GPULITE_<NAME>"`` or ``"default"``."""
        flag = _flag(name)
        self._resolve()
        if name in self._set:
            return "set"
        assert self._from_env is not None
        return flag.env_var if name in self._from_env else "default"

    def __repr__(self) -> str:
        return "Environment(" + ", ".join(f"{k}={v!r}" for k, v in self.flags().items()) + ")"


_ENV = Environment()


def cache_dir(subdir: str = "") -> Path:
    """gpulite's per-user cache, ``$GPULITE_CACHE_DIR`` (default ``~/.cache/gpulite``), or ``subdir`` in it:
    the zoo's models, the compiled C libraries, the solutions' ``auto`` measurements."""
    return Path(os.environ.get("GPULITE_CACHE_DIR") or Path.home() / ".cache" / "gpulite") / subdir


def env() -> Environment:
    """The process-wide :class:`Environment` (TF.js ``tf.env()``)."""
    return _ENV


def enable_debug_mode() -> None:
    """Log every kernel with its shapes, time and memory (TF.js ``tf.enableDebugMode``).

    Turns ``prod`` off. Kernels on the GPU are waited for one by one, so runs get slower.
    """
    _ENV.set("prod", False)
    _ENV.set("debug", True)
    log.warning("gpulite debug mode is on: every kernel is synchronised, timed and logged; "
                "this slows everything down")


def enable_prod_mode() -> None:
    """Skip argument validation and NaN checks (TF.js ``tf.enableProdMode``); turns ``debug`` off."""
    _ENV.set("debug", False)
    _ENV.set("prod", True)
