"""Programs: one compute dispatch, its WGSL and its uniform block; plus the pipeline cache.

A :class:`Program` is what a kernel factory returns. Its ``key`` names everything the WGSL
depends on (the ``.wgsl`` file, the template substitutions that encode dtypes and options,
the workgroup size and the uniform layout) and nothing that depends on sizes: sizes and
tensor offsets travel in the uniform block (``params``). So two interpreters of one model,
or one model at several input sizes, reuse the same pipelines.
"""

from __future__ import annotations

import math
import re
import string
import struct
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import wgpu

from gpulite.errors import GpuliteError
from gpulite.model.opdefs import FusedActivation

WGSL_DIR = Path(__file__).parent / "wgsl"
MAX_WORKGROUPS_PER_DIM = 65535  # WebGPU's guaranteed minimum of maxComputeWorkgroupsPerDimension
DEFAULT_WORKGROUP_SIZE = 64

# Element type of binding 0 (``buf``). The bind-group layout only says "storage buffer", so
# kernels may view the arena as f32 (float math), i32 (int32 math) or u32 (data movement of
# any 4-byte dtype: moves through u32 keep every bit, where an f32 path could quiet NaN
# patterns or flush denormals, i.e. corrupt int32 values such as -1 or 5).
WORDS = ("f32", "i32", "u32")


def wgsl_clamp(expr: str, act: FusedActivation, word: str = "f32") -> str:
    """WGSL for ``expr`` clamped as fused activation ``act`` clamps (its
    :attr:`~FusedActivation.clamp`, in ``word`` literals); ``expr`` itself when there is no clamp.

    TFLite's kernels turn a fused activation into a clamp range (CalculateActivationRange),
    which is unbounded for TANH and SIGN_BIT: fused there, they are no-ops in LiteRT, so here
    too. An f32 or i32 word only: moves through u32 take no activation.
    """
    rng = act.clamp
    if rng is None:
        return expr
    if word not in ("f32", "i32"):
        raise ValueError(f"fused activation {act} has no WGSL form for {word} words")

    def lit(v: float) -> str:
        return repr(float(v)) if word == "f32" else str(int(v))
    lo, hi = rng
    return f"max({expr}, {lit(lo)})" if math.isinf(hi) else f"clamp({expr}, {lit(lo)}, {lit(hi)})"

# Weights (constant operands read through ``wt``/``wt4``; see :func:`make_program`): "f32", or
# IEEE float16 (precision="fp16") read one of two ways. Both f16 forms bind the arena a fourth
# time (binding 3: the device's second bind-group layout, device.py) and read the same bytes:
# "f16" declares it array<vec4<f16>> (WGSL's f16 extension, `enable f16;`, loads widened with
# f32()); "f16-packed" declares it array<vec2<u32>> and widens with unpack2x16float (core WGSL).
# On lavapipe fp16 with packed loads measured 7-16% faster than fp32, with f16 loads a median
# 7% slower (backend.py picks packed loads on CPU adapters; docs/webgpu.md, "Precision").
WEIGHT_FORMATS = ("f32", "f16", "f16-packed")
_WEIGHT_READS = {
    "f32": "fn wt(i: u32) -> f32 { return buf[i]; }\nfn wt4(i: u32) -> vec4<f32> { return buf4[i]; }\n",
    "f16": ("@group(0) @binding(3) var<storage, read_write> wbuf: array<vec4<f16>>;\n"
            "fn wt(i: u32) -> f32 { return f32(wbuf[i >> 2u][i & 3u]); }\n"
            "fn wt4(i: u32) -> vec4<f32> { return vec4<f32>(wbuf[i]); }\n"),
    "f16-packed": ("@group(0) @binding(3) var<storage, read_write> wbuf: array<vec2<u32>>;\n"
                   "fn wt(i: u32) -> f32 { return unpack2x16float(wbuf[i >> 2u][(i >> 1u) & 1u])[i & 1u]; }\n"
                   "fn wt4(i: u32) -> vec4<f32> {\n"
                   "    let w = wbuf[i];\n"
                   "    return vec4<f32>(unpack2x16float(w.x), unpack2x16float(w.y));\n}\n"),
}

# The entry point: one ``run(i)`` per thread, or one ``run_group(g, t)`` per thread of
# cooperating workgroups (make_program's ``groups``).
_THREAD_MAIN = """@compute @workgroup_size($WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) nwg: vec3<u32>) {
    // Large grids spill into y (65535 workgroups per dimension); fold them back to one index.
    let i = gid.x + gid.y * nwg.x * ${WG}u;
    if (i >= P.n) {
        return;
    }
    run(i);
}"""
_GROUP_MAIN = """@compute @workgroup_size($WG)
fn main(@builtin(workgroup_id) wid: vec3<u32>, @builtin(local_invocation_index) t: u32,
        @builtin(num_workgroups) nwg: vec3<u32>$SG_IN) {
    let g = wid.x + wid.y * nwg.x;  // uniform in the workgroup: the return keeps barriers valid
    if (g >= P.n) {
        return;
    }$SG_SET
    run_group(g, t);
}"""
# Subgroup operations for cooperating workgroups (make_program's ``subgroups``): the tree
# kernels replace their last workgroup-memory steps (partners closer than subgroup_width
# threads) by sg_xor_<type> shuffles. Without them subgroup_width is 0 and the tree stays in
# workgroup memory; sg_xor is then never called but must exist for the WGSL to compile.
_SUBGROUP_DECLS = {
    True: "var<private> subgroup_width: u32;  // set by main from @builtin(subgroup_size), uniform\n"
          + "".join(f"fn sg_xor_{w}(v: {w}, m: u32) -> {w} {{ return subgroupShuffleXor(v, m); }}\n" for w in WORDS),
    False: "const subgroup_width = 0u;  // no subgroups: every tree step in workgroup memory\n"
           + "".join(f"fn sg_xor_{w}(v: {w}, m: u32) -> {w} {{ return v; }}\n" for w in WORDS),
}

_SCALAR = {"u32": "I", "i32": "i", "f32": "f"}
_VEC4 = {"vec4u": ("vec4<u32>", "I"), "vec4i": ("vec4<i32>", "i"), "vec4f": ("vec4<f32>", "f")}


class KernelError(GpuliteError, RuntimeError):
    """The GPU rejected a kernel (WGSL, pipeline, bind group or dispatch); names the kernel."""


@dataclass(frozen=True)
class Program:
    """One compute dispatch.

    Attributes
    ----------
    name : str
        Kernel name and shapes, for error messages and ``describe()``.
    key : tuple
        Pipeline cache key; equal keys must mean identical ``wgsl``.
    wgsl : str
        Complete shader source.
    workgroup_size : int
        Threads per workgroup (1-D).
    dispatch : tuple of int
        Workgroup counts (x, y, z).
    params : bytes
        The uniform block, laid out as the generated ``struct Params``.
    threads : int
        Threads that do work (``P.n``); the rest of the last workgroups return at once.
    weights : {"f32", "f16"}
        How its weights are stored; ``"f16"`` programs (either way of reading them) need the
        device's f16 bind-group layout, with the arena as a fourth binding.
    math : {"f32", "f16"}
        ``"f16"``: its products are computed in f16 (make_program's ``math``).
    reduction_per_thread : int
        For reductions and matrix products (MEAN, SOFTMAX, pools, CONV_2D, FULLY_CONNECTED,
        ...): the most input elements one thread folds, one after the other, into one output
        or partial result (a dot product's K, a pool's window, a row's share of a
        workgroup's tree). 0 for kernels that reduce nothing. Declared by the kernel, checked
        against every compiled plan by tests (tests/webgpu/test_reduction_work.py).
    """

    name: str
    key: tuple
    wgsl: str
    workgroup_size: int
    dispatch: tuple[int, int, int]
    params: bytes
    threads: int
    weights: str = "f32"
    reduction_per_thread: int = 0
    math: str = "f32"


def _pack(fields: list[tuple[str, str, Any]]) -> tuple[str, bytes]:
    """WGSL ``struct Params`` text and its bytes, following the uniform address space layout."""
    decl, data = [], bytearray()
    for name, typ, value in fields:
        if typ in _SCALAR:
            decl.append(f"  {name}: {typ},")
            data += struct.pack("<" + _SCALAR[typ], value)
        elif typ in _VEC4:
            wgsl_t, code = _VEC4[typ]
            data += bytes(-len(data) % 16)  # vec4 aligns to 16 bytes
            vals = list(value) + [0] * (4 - len(value))
            if len(vals) != 4:
                raise ValueError(f"param {name}: {typ} takes at most 4 values, got {value!r}")
            decl.append(f"  {name}: {wgsl_t},")
            data += struct.pack("<4" + code, *vals)
        else:
            raise ValueError(f"param {name}: unknown type {typ!r}")
    data += bytes(-len(data) % 16)  # a uniform struct's size rounds up to 16
    return "struct Params {\n" + "\n".join(decl) + "\n};", bytes(data)


# ``//#include "<file>.wgsl"`` on a line of its own: the file (from ``wgsl/``) replaces the line.
_INCLUDE = re.compile(r"^//#include\b(.*)$", re.M)
_INCLUDE_ARG = re.compile(r'\s+"([\w-]+\.wgsl)"\s*')


def _read(file: str, where: str) -> str:
    try:
        return (WGSL_DIR / file).read_text()
    except FileNotFoundError:
        raise KernelError(f"{where}: no WGSL file {file!r} in {WGSL_DIR}") from None


def _expand(text: str, file: str, seen: set[str]) -> str:
    """``text`` (of ``file``) with its includes expanded, recursively; a file already in
    ``seen`` (included earlier in the same program) becomes a comment, so shared helpers are
    defined once however many files include them."""
    def include(m: re.Match[str]) -> str:
        arg = _INCLUDE_ARG.fullmatch(m.group(1))
        if arg is None:
            raise KernelError(f'{file}: malformed include {m.group(0)!r} (expected //#include "<name>.wgsl")')
        name = arg.group(1)
        if name in seen:
            return f"// {name}: included above"
        seen.add(name)
        return _expand(_read(name, f'{file}: //#include "{name}"'), name, seen)
    return _INCLUDE.sub(include, text)


@cache
def _sources(stems: tuple[str, ...]) -> tuple[str, ...]:
    """The texts of ``wgsl/<stem>.wgsl`` for one program, includes expanded (each file once)."""
    seen: set[str] = set()
    texts = []
    for stem in stems:
        file = f"{stem}.wgsl"
        seen.add(file)
        texts.append(_expand(_read(file, "kernel source"), file, seen))
    return tuple(texts)


def dispatch_size(threads: int, workgroup_size: int) -> tuple[int, int, int]:
    """Workgroup counts covering ``threads``; spills into y past the per-dimension limit."""
    groups = max(1, math.ceil(threads / workgroup_size))
    if groups <= MAX_WORKGROUPS_PER_DIM:
        return (groups, 1, 1)
    x = MAX_WORKGROUPS_PER_DIM
    return (x, math.ceil(groups / x), 1)


def make_program(name: str, source: str | tuple[str, ...], params: list[tuple[str, str, Any]], threads: int, *,
                 act: FusedActivation = FusedActivation.NONE, workgroup_size: int = DEFAULT_WORKGROUP_SIZE,
                 word: str = "f32", weights: str = "f32", groups: bool = False, reduction_per_thread: int = 0,
                 subgroups: bool = False, math: str = "f32", atomics: bool = False, **subs: str) -> Program:
    """Build a :class:`Program` from ``wgsl/<source>.wgsl``.

    Parameters
    ----------
    name : str
        Kernel name with shapes, shown in errors.
    source : str or tuple of str
        File stem under ``wgsl/`` (or several, concatenated in order: e.g. an index map and
        the data-movement driver that calls it); together they define ``fn run(i: u32)``
        and read ``P.<field>``. A line ``//#include "<file>.wgsl"`` is replaced by that file
        of ``wgsl/`` (itself expanded; each file at most once per program), so kernels share
        helpers such as ``nhwc.wgsl``'s index arithmetic; the sources (and so the key) name
        the includes through the files that include them.
    params : list of (field, type, value)
        The uniform block after the implicit leading ``n: u32`` (= ``threads``). Types:
        ``u32``, ``i32``, ``f32``, ``vec4u``, ``vec4i``, ``vec4f``. Sizes and offsets only.
    threads : int
        One thread per ``i`` in ``0 .. threads-1``; with ``groups``, the number of workgroups.
    act : FusedActivation, optional
        The fused activation (``node.activation``); becomes ``fn act(v: W) -> W`` for the
        word type ``W`` (:func:`wgsl_clamp`). The activation is part of the program key: a
        clamp variant per activation is cheaper than a branch per element in every kernel.
    word : {"f32", "i32", "u32"}
        Element type of ``buf`` (binding 0). ``u32`` for bit-exact moves of any 4-byte dtype;
        it takes no activation.
    weights : {"f32", "f16", "f16-packed"}
        Storage of the constants the kernel reads with ``wt(i)`` (one value, ``i`` in elements
        of that storage) and ``wt4(i)`` (four values, ``i`` in vec4s), defined for ``f32``
        words: ``GpuContext.weights``, matching what ``GpuContext.weight``/``weight_input``
        stored. Both return f32: f16 weights are widened on load (with WGSL's f16 type, or
        ``unpack2x16float`` for ``"f16-packed"``); ``math`` says what they are multiplied in.
    groups : bool
        Workgroups that cooperate (workgroup memory, barriers): the source defines
        ``fn run_group(g: u32, t: u32)`` instead of ``run``, called by every thread ``t`` in
        ``0 .. workgroup_size-1`` of workgroup ``g`` in ``0 .. threads-1`` (``P.n`` is the
        workgroup count; ``g`` is uniform in the workgroup, so barriers may follow a branch
        on it). :attr:`Program.threads` is then ``threads * workgroup_size``.
    reduction_per_thread : int
        See :class:`Program`; every reduction and matrix-product kernel declares it.
    subgroups : bool
        With ``groups`` only: ``subgroup_width`` (WGSL) is the subgroup size and
        ``sg_xor_f32/i32/u32(v, m)`` is ``subgroupShuffleXor``; without, ``subgroup_width`` is 0.
        Only on a device whose subgroups :meth:`~.device.GpuDevice.subgroups` vouches for.
    math : {"f32", "f16"}
        The type of ``$MT`` in the source: the kernels that take it (gemm.wgsl, the register-
        blocked depthwise) multiply in ``$MT`` and accumulate in f32. ``"f16"`` adds
        ``enable f16;`` (the device's ``shader-f16``).
    atomics : bool
        Binding 2 (the arena again) declared ``abuf: array<atomic<u32>>`` instead of ``buf4``:
        for a kernel that flags bad inputs in a check's words (``GpuArena.add_check``) with
        ``atomicAdd`` / ``atomicMax``. Not with f32 words (their weight reads use ``buf4``).
    **subs : str
        ``$NAME`` template substitutions in the source (dtypes, options); part of the key.
        ``$WG`` (the workgroup size) and ``$MT`` (``math``) are always substituted.
    """
    if word not in WORDS:
        raise ValueError(f"word {word!r}: expected one of {sorted(WORDS)}")
    act_body = f"return {wgsl_clamp('v', act, word)};"
    if weights not in WEIGHT_FORMATS:
        raise ValueError(f"weights {weights!r}: expected one of {WEIGHT_FORMATS}")
    if math not in ("f32", "f16"):
        raise ValueError(f"math {math!r}: expected 'f32' or 'f16'")
    if subgroups and not groups:
        raise ValueError(f"{name}: subgroups need groups=True")
    if atomics and word == "f32":
        raise ValueError(f"{name}: atomics take the place of buf4, which f32 words read weights through")
    struct_src, data = _pack([("n", "u32", threads), *params])
    main = string.Template(_GROUP_MAIN if groups else _THREAD_MAIN).substitute(
        WG=workgroup_size, SG_IN=", @builtin(subgroup_size) sg: u32" if subgroups else "",
        SG_SET="\n    subgroup_width = sg;" if subgroups else "")
    if groups:
        main = _SUBGROUP_DECLS[subgroups] + main
    header = string.Template(_sources(("common",))[0]).substitute(
        PARAMS=struct_src, WG=workgroup_size, ACT=act_body, WORD=word, MAIN=main,
        BINDING2="abuf: array<atomic<u32>>" if atomics else "buf4: array<vec4<f32>>")
    if word == "f32":
        header += "\n" + _WEIGHT_READS[weights]
    if "f16" in (weights, math):  # an enable directive must precede every declaration
        header = "enable f16;\n" + header
    sources = (source,) if isinstance(source, str) else tuple(source)
    body = "\n".join(string.Template(text).substitute(subs, WG=workgroup_size, MT=math) for text in _sources(sources))
    layout = tuple((f, t) for f, t, _ in params)
    key = (sources, tuple(sorted(subs.items())), act, workgroup_size, word, layout, groups, subgroups, math, atomics,
           weights)  # weights last: read as key[-1]
    if groups:
        dispatch, threads = dispatch_size(threads, 1), threads * workgroup_size
    else:
        dispatch = dispatch_size(threads, workgroup_size)
    return Program(name, key, header + "\n" + body, workgroup_size, dispatch, data, threads,
                   "f32" if weights == "f32" else "f16", reduction_per_thread, math)


def get_pipeline(gdev: Any, program: Program) -> Any:
    """The compute pipeline for ``program`` from ``gdev``'s cache, compiling it on first use.

    Raises
    ------
    KernelError
        When the WGSL or the pipeline is rejected, naming the kernel; or when two programs
        share a key but not their WGSL (a kernel forgot to put an option into its key).
    """
    hit = gdev.pipelines.get(program.key)
    if hit is not None:
        if hit[0] != program.wgsl:
            raise KernelError(f"{program.name}: pipeline key {program.key} already names different WGSL")
        return hit[1]
    try:
        module = gdev.device.create_shader_module(label=program.name, code=program.wgsl)
        pipeline = gdev.device.create_compute_pipeline(
            label=program.name, layout=gdev.pipeline_layout_for(program.weights),
            compute={"module": module, "entry_point": "main"})
    except wgpu.GPUError as e:
        raise KernelError(f"{program.name}: the GPU rejected the kernel: {e}") from e
    gdev.pipelines[program.key] = (program.wgsl, pipeline)
    return pipeline
