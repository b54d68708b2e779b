"""Integer elementwise binary ops under ``quantized="exact"``: ADD, SUB, MUL (int8, uint8, int16),
SQUARED_DIFFERENCE (int8), MAXIMUM, MINIMUM (codes: int8, uint8, int16), PRELU (int8, uint8; int16
with an int8 alpha) and the comparisons (rescaled where LiteRT rescales, ``cpu/kernels/logic.rescaled``;
else codes), with broadcasting and fused activations, bit-equal to the cpu kernels (and so to LiteRT).

LiteRT's integer arithmetic in WGSL (``qbinary.wgsl`` over ``qmath.wgsl``), with the constants
the cpu kernels compute (the functions of ``cpu/kernels/quantized_binary.py``,
``quantized_int16.py``, ``quantized_squared_difference.py``, ``quantized_activations.py``: one
definition). As on the cpu: XNNPACK's arithmetic where its delegate takes the scales, else
TFLite's builtin kernels, whose NEON loops leave some elements to a scalar loop that rounds
differently (``builtin_runs``: the same (run, block) test in WGSL). Whether the node is valid at
all is asked of the cpu kernel itself (built once on stand-in shapes): a node it refuses is
refused here too, and then fails on the cpu as it would there. Quantized nodes take this path
under ``"exact"`` only; unquantized int8/uint8/int16 MAXIMUM, MINIMUM and comparisons in both modes.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gpulite.backends.cpu.kernels import quantized_binary as qb
from gpulite.backends.cpu.kernels import quantized_int16 as q16
from gpulite.backends.cpu.kernels.logic import rescaled
from gpulite.backends.cpu.kernels.lookup import scale_zp
from gpulite.backends.cpu.kernels.quantized_activations import prelu16_multipliers, prelu_multipliers
from gpulite.backends.cpu.kernels.quantized_squared_difference import squared_difference_multipliers
from gpulite.backends.cpu.quant import QRANGE, quantize_multiplier
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.code_table import NARROW, cpu_kernel
from gpulite.backends.webgpu.kernels.mapping import broadcast
from gpulite.backends.webgpu.kernels.movement import words
from gpulite.backends.webgpu.kernels.qmath import load_fn
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

COMPARE = {Op.EQUAL: "==", Op.NOT_EQUAL: "!=", Op.LESS: "<", Op.LESS_EQUAL: "<=", Op.GREATER: ">",
           Op.GREATER_EQUAL: ">="}
OPS = (Op.ADD, Op.SUB, Op.MUL, Op.SQUARED_DIFFERENCE, Op.MAXIMUM, Op.MINIMUM, Op.PRELU, *COMPARE)
_RAW = (Op.MAXIMUM, Op.MINIMUM)  # compare codes (LiteRT requires one quantization)
_I16, _BOOL = np.dtype(np.int16), np.dtype(np.bool_)
# Every element takes $BODY (run, block), or every one $TAIL.
_ALL_BODY, _ALL_TAIL = (0xFFFFFFFF, 1), (1, 2)


def _quantized(t: Any) -> bool:
    return t.quant is not None and bool(np.size(t.quant.scale))


def applies(node: Node, ctx: GpuContext) -> bool:
    """Two 8/16-bit integer inputs and output of one dtype, quantized (under ``"exact"``, or in
    both modes for a comparison of codes as they are), or raw codes for MAXIMUM / MINIMUM."""
    if len(node.inputs) != 2 or min(node.inputs) < 0 or len(node.outputs) != 1 or node.epilogue or node.prelu_alpha:
        return False
    infos = (ctx.in_info(0), ctx.in_info(1), ctx.out_info(0))
    out_ok = infos[2].dtype == (_BOOL if node.op in COMPARE else infos[0].dtype)
    # int16 PRELU takes an int8 alpha (16x8 mode)
    b_dtype = np.dtype(np.int8) if node.op == Op.PRELU and infos[0].dtype == _I16 else infos[0].dtype
    if infos[1].dtype != b_dtype or infos[0].dtype not in NARROW or not out_ok:
        return False
    if any(_quantized(t) for t in infos):  # codes compared as they are are exact in either mode
        return ctx.quantized == "exact" or (node.op in COMPARE and not rescaled(node.op, infos[0]))
    return node.op in _RAW or node.op in COMPARE


def _shift_ok(ctx: GpuContext, what: str, e: int, lo: int = 0, hi: int = 31) -> None:
    if not lo <= e <= hi:
        raise ctx.unsupported(f"{what} shift {e} outside {lo}..{hi} (qmath.wgsl's range)")


def _arithmetic(node: Node, ctx: GpuContext, dt: np.dtype, a_shape: tuple, b_shape: tuple,
                out_shape: tuple) -> tuple[str, str, dict[str, Any], tuple[int, int]]:
    """``(body, tail, fields, (run, block))``: the WGSL functions and their uniform fields, as the
    cpu kernel picks them (module docstring)."""
    op, act = node.op, node.activation
    (s1, z1), (s2, z2), (so, zo) = (scale_zp(node, t) for t in (ctx.in_info(0), ctx.in_info(1), ctx.out_info(0)))
    f: dict[str, Any] = {"z1": z1, "z2": z2, "zo": zo}
    if op == Op.PRELU:
        (f["m1"], f["e1"]), (f["m2"], f["e2"]) = (prelu16_multipliers if dt == _I16 else prelu_multipliers)(s1, s2, so)
        f["lo"], f["hi"] = QRANGE[dt]
        return "prelu", "prelu", f, _ALL_BODY
    if op == Op.SQUARED_DIFFERENCE:
        mults = squared_difference_multipliers(s1, s2, so)
        assert mults is not None  # the cpu kernel refused it otherwise
        (f["m1"], f["e1"]), (f["m2"], f["e2"]), (f["mo"], f["eo"]) = mults
        f["lo"], f["hi"] = QRANGE[dt]
        return "sqdiff", "sqdiff", f, _ALL_BODY
    if dt == _I16:
        f["lo"], f["hi"] = act.quantized_bounds(so, 0, dt)
        if op == Op.MUL:
            f["m1"], f["e1"] = q16.mul_multiplier(s1, s2, so)
            return "mul16", "mul16", f, _ALL_BODY
        if q16.uses_pot_kernel(node, s1, s2, so):  # LiteRT's shift-only kernel: another formula
            raise ctx.unsupported("int16 ADD/SUB with power-of-two scales (LiteRT's shift-only kernel)")
        f["m1"], f["e1"], f["m2"], f["e2"], f["mo"], f["eo"] = q16.add_params(s1, s2, so, op == Op.SUB)
        f["n1"], f["n2"] = 15 + f["e1"], 15 + f["e2"]
        size = int(np.prod(out_shape, dtype=np.int64))
        tail = q16.add_tail(node, a_shape, b_shape, out_shape)
        if tail == size:
            return "add16_ref", "add16_ref", f, _ALL_TAIL
        _shift_ok(ctx, "output", -f["eo"])
        return "add16_opt", "add16_ref", f, (size, 16)
    if qb.xnn_accepts(op, s1, s2, so):
        f["lo"], f["hi"] = qb.xnn_activation_range(act, so, zo, dt)
        if op == Op.MUL:
            f["fscale"] = float(qb.xnn_mul_scale(s1, s2, so))
            return "xnn_mul", "xnn_mul", f, _ALL_BODY
        f["m1"], f["m2"], f["eo"], f["bias"] = qb.xnn_add_params(s1, z1, s2, z2, so, op == Op.SUB)
        if not -(1 << 31) <= f["bias"] < (1 << 31):
            raise ctx.unsupported(f"XNNPACK's rounding bias {f['bias']} does not fit int32")
        return "xnn_add", "xnn_add", f, _ALL_BODY
    f["lo"], f["hi"] = act.quantized_bounds(so, zo, dt)
    runs = qb.builtin_runs(op, a_shape, b_shape, out_shape, dt) if op != Op.SUB else None
    if op == Op.MUL:
        f["m1"], f["e1"] = qb.mul_multiplier(s1, s2, so)
        return "mul_neon", "mul_scalar", f, runs or _ALL_TAIL
    (f["m1"], f["e1"]), (f["m2"], f["e2"]), (f["mo"], f["eo"]) = qb.add_multipliers(s1, s2, so)
    if op == Op.SUB:
        f["m2"] = -f["m2"]
        return "add_scalar", "add_scalar", f, _ALL_TAIL
    f["n1"], f["n2"] = 20 + f["e1"], 20 + f["e2"]
    if runs is not None:
        _shift_ok(ctx, "output", -f["eo"])
        if dt == np.uint8:  # shifts right by -e1, -e2
            _shift_ok(ctx, "input", -f["e1"])
            _shift_ok(ctx, "input", -f["e2"])
    return ("add_neon_i8" if dt == np.int8 else "add_neon_u8"), "add_scalar", f, runs or _ALL_TAIL


def _comparison(node: Node, ctx: GpuContext, f: dict[str, Any]) -> str:
    """``cmp_scaled`` with each input's rescale (``(q - zp) << 8`` by its scale, a Q31 multiplier)
    where the cpu kernel rescales, else ``cmp_codes``."""
    a, b = ctx.in_info(0), ctx.in_info(1)
    if not rescaled(node.op, a):
        return "cmp_codes"
    (s1, f["z1"]), (s2, f["z2"]) = scale_zp(node, a), scale_zp(node, b)
    (f["m1"], f["e1"]), (f["m2"], f["e2"]) = quantize_multiplier(s1), quantize_multiplier(s2)
    return "cmp_scaled"


def qbinary(node: Node, ctx: GpuContext) -> Program:
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    cpu_kernel(node, ctx, [(1,) * len(a.shape), (1,) * len(b.shape), (1,) * len(out.shape)])  # refuses as the cpu
    try:
        bshape = np.broadcast_shapes(a.shape, b.shape)
    except ValueError:
        raise ctx.unsupported(f"shapes {a.shape} and {b.shape} do not broadcast") from None
    if tuple(bshape) != out.shape or (node.op == Op.PRELU and a.shape != out.shape):
        raise ctx.unsupported(f"{a.shape} and {b.shape} do not broadcast to the output {out.shape}")
    dims = broadcast([a.shape, b.shape], out.shape)
    if dims is None:
        raise ctx.unsupported(f"broadcast of {a.shape} and {b.shape} needs more than 4 dims")
    shape, (sa, sb) = dims
    dt = a.dtype
    fields: dict[str, Any] = {}
    run_block = _ALL_BODY
    if node.op in _RAW:
        body = tail = "max" if node.op == Op.MAXIMUM else "min"
    elif node.op in COMPARE:
        body = tail = _comparison(node, ctx, fields)
    else:
        body, tail, fields, run_block = _arithmetic(node, ctx, dt, a.shape, b.shape, out.shape)
    for name in ("e1", "e2", "eo"):
        _shift_ok(ctx, name, fields.get(name, 0), -31, 31)
    ints = ("z1", "z2", "zo", "lo", "hi", "m1", "e1", "m2", "e2", "mo", "eo", "n1", "n2", "bias")
    params = [("shape", "vec4u", shape), ("sa", "vec4u", sa), ("sb", "vec4u", sb), ("elems", "u32", out.size),
              ("a_off", "u32", a.offset), ("b_off", "u32", b.offset), ("out_off", "u32", out.offset),
              *((k, "i32", int(fields.get(k, 0))) for k in ints), ("fscale", "f32", float(fields.get("fscale", 0.0))),
              ("run", "u32", run_block[0]), ("block", "u32", run_block[1])]
    per = 4 // out.dtype.itemsize  # a bool is a byte, packed as int8
    title = f"{node.op.lower()} {dt} {a.shape}x{b.shape}->{out.shape} ({body}/{tail})"
    return make_program(title, ("qbinary", "qwords"), params, words(out), word="u32", LOAD_A=load_fn(dt),
                        LOAD_B=load_fn(b.dtype), BODY=body, TAIL=tail, PER=str(per),
                        PUT="q_byte" if per == 4 else "q_half", CMP=COMPARE.get(node.op, "=="))


for _op in OPS:
    register_case(_op, "webgpu", applies)(qbinary)
declare_int8("webgpu", *OPS)
