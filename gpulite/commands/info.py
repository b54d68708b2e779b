"""``gpulite info``: versions, the registered backends and the one in use, precision, flags.

For each backend: its priority and rank for the automatic choice, its kernel count; for
WebGPU, each adapter with its type, features and the limits gpulite depends on.

Usage::

    gpulite info
"""

from __future__ import annotations

import argparse
import platform
from collections.abc import Callable
from pathlib import Path

import numpy as np

import gpulite
from gpulite.backends.cpu import jit
from gpulite.errors import GpuliteError


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite info``."""
    p = subparsers.add_parser("info", help="versions and backends", description=__doc__.split("\n\n")[0])
    p.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """``gpulite info``; returns the exit status."""
    info()
    return 0


def info(out: Callable[[str], None] = print) -> None:
    """Print versions, the registered backends (rank, kernels, adapters), the active one and why, and the flags."""
    from importlib.metadata import PackageNotFoundError, version

    from gpulite import runtime
    from gpulite.environment import env

    out(f"gpulite    {gpulite.__version__} ({Path(gpulite.__file__).parent})")
    out(f"python     {platform.python_version()} ({platform.platform()})")
    out(f"numpy      {np.__version__}")
    try:
        out(f"litert     {version('ai-edge-litert')} (the litert backend; the reference for bench and tests)")
    except PackageNotFoundError:
        out("litert     not installed (pip install 'gpulite[litert]' for the litert backend and bench comparisons)")
    try:
        active, why = runtime.get_backend(), runtime.backend_choice()
    except GpuliteError as e:
        active, why = None, str(e)
    out("backends   (name, priority -> rank for the automatic choice, kernels)")
    adapters = None
    for b in runtime.describe_backends():
        rank = "cannot start" if b.rank is None else f"rank {b.rank}"
        mark = "*" if b.name == active else " "
        note = f"; {b.note}" if b.note else ""
        out(f" {mark}{b.name:<9} priority {b.priority} -> {rank}, {b.kernels} kernels{note}")
        if b.name == "webgpu":
            adapters = _adapters(out)
    out(f"active     {active or 'none'} ({why})")
    _measured(out)
    e = env()
    _precision(out, active, e.get("precision"), e.source("precision"), adapters)
    out("flags      " + ", ".join(f"{k}={v!r}" + (f" [{e.source(k)}]" if e.source(k) != "default" else "")
                                  for k, v in e.flags().items()))
    out(f"cpu loops  {jit.status()}")
    if adapters is not None:  # wgpu imports: say how the WebGPU backend records its dispatches
        from gpulite.backends.webgpu import encode

        out(f"gpu encode {encode.status()}")


def _measured(out: Callable[[str], None]) -> None:
    """What ``auto`` measured on this machine (gpulite.measure: models and solutions), fastest first."""
    from gpulite import measure

    path = measure.cache_path()
    entries = sorted(measure.read_cache(path).values(), key=lambda e: str(e.get("subject")))
    out(f"auto       backend auto for models and solutions, measured on first use ({path}): "
        + ("nothing measured yet" if not entries else f"{len(entries)} configuration(s)"))
    for e in entries:
        ms = ", ".join(f"{n} {v:.2f}" for n, v in sorted(e.get("ms", {}).items(), key=lambda kv: kv[1]))
        out(f"             {e.get('subject')}, {e.get('machine', {}).get('load', 'unknown')}: {e.get('chosen')} "
            f"(ms per {e.get('unit', 'frame')}: {ms}; {e.get('measured')}, {measure.load_text(e, named=False)})")


def _size(v: int, key: str) -> str:
    """A limit's value; byte sizes also in KiB/MiB/GiB."""
    if "size" not in key or key.startswith("max-compute-workgroup-size") or v < 1024:
        return str(v)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if v >= div:
            return f"{v} ({v / div:.4g} {unit})"
    return str(v)


def _wrapped(out: Callable[[str], None], head: str, items: list[str], indent: int = 29, width: int = 110) -> None:
    """``head`` then ``items`` comma-separated, wrapped under the first item."""
    line = head.ljust(indent)
    for k, item in enumerate(items):
        piece = item + ("," if k < len(items) - 1 else "")
        if len(line) + len(piece) + 1 > width and line.strip() != head.strip():  # never an empty first line
            out(line.rstrip())
            line = " " * indent
        line += piece + " "
    out(line.rstrip())


def _adapters(out: Callable[[str], None]) -> list[dict] | None:
    """Each WebGPU adapter: type, backend, features and the limits gpulite depends on."""
    try:
        from gpulite.backends.webgpu import adapter_info
    except ImportError as e:
        out(f"             not available ({e})")
        return None
    infos = adapter_info()
    if not infos:
        out("             no adapter")
    for a in infos:
        default = ", the default" if a["default"] else ""
        out(f"             adapter {a['name']} [{a['adapter_type']}, {a['backend_type']}, "
            f"shader-f16 {'yes' if a['shader_f16'] else 'no'}{default}]")
        _wrapped(out, f"               features ({len(a['features'])})", a["features"] or ["none"])
        _wrapped(out, "               limits", [f"{k} {_size(v, k)}" for k, v in a["key_limits"].items()])
    return infos


def _precision(out: Callable[[str], None], active: str | None, asked: str, source: str,
               adapters: list[dict] | None) -> None:
    """The precision asked for (the ``precision`` flag: what an Interpreter gets when it does not
    say) and what is in force for it on each backend (webgpu: on the default adapter)."""
    default = next((a for a in adapters or () if a["default"]), None)
    if default is None:
        gpu = None
        gpu_note = ("not available" if adapters is None else "no adapter" if not adapters
                    else "no default adapter: GPULITE_ADAPTER matches none")
    else:
        f16 = default["shader_f16"]
        gpu = "fp16" if asked == "fp16" and f16 else "fp32"
        gpu_note = (f"on {default['name']}; shader-f16 {'available' if f16 else 'not available'}"
                    + ("" if f16 or asked == "fp32" else ": fp16 falls back to fp32")
                    + ("; fp16 = float16 weights and products, float32 activations and sums" if gpu == "fp16" else ""))
    in_force = {"cpu": "fp32", "litert": "fp32", "webgpu": gpu}.get(active or "", None)
    out(f"precision  {asked} asked (flag precision, {source}); in force on the active backend "
        f"({active or 'none'}): {in_force or 'n/a'}")
    out("             cpu      fp32 (the cpu backend computes in float32 only)")
    out("             litert   fp32 (LiteRT's XNNPACK kernels on float models, as plain LiteRT runs them)")
    out(f"             webgpu   {gpu or '-'} ({gpu_note})")
