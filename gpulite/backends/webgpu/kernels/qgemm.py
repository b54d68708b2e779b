"""Integer matrix products on the GPU (``quantized="exact"``): FULLY_CONNECTED and BATCH_MATMUL
here, the convolutions in kernels/qconv.py, all through :func:`product_programs`.

Each is a case of its op (:func:`~gpulite.backends.kernels.register_case`) taking the nodes
with int8 / uint8 / int16 codes under ``quantized="exact"``, and computes what its CPU kernel
(``backends/cpu/kernels/fully_connected.py``, ``batch_matmul.py``, ``quantized_conv.py``,
``transpose_conv.py``) computes, bit for bit: the sums of ``(x - zp_x) * (w - zp_w)`` in
TFLite's int32 accumulator (int64 for int16 inputs), plus the int32 / int64 bias, rescaled by
the op's own ``MultiplyByQuantizedMultiplier`` form (:data:`RESCALES`: conv double rounding,
FULLY_CONNECTED single rounding, the 16x8 convs the int64 overload; wgsl/qmath.wgsl), plus the
output zero point, clamped to the fused activation's range. The multipliers are the CPU
kernels' own factors (``quantized_conv.rescale_factors``, ``batch_matmul.quantized_rescale``).

One thread makes one output word (4 int8 or 2 int16 codes, so no two threads write a word),
each code from its own dot product. A dot product longer than :data:`MAX_PER_THREAD` is cut into
slices: a first dispatch writes each slice's 64-bit partial sum, a second adds them, rescales
and packs (the same integers: the sums are exact).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.batch_matmul import quantized_rescale
from gpulite.backends.cpu.kernels.quantized_conv import rescale_factors
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.elementwise import broadcast_strides
from gpulite.backends.webgpu.kernels.epilogue import has_fused
from gpulite.backends.webgpu.kernels.qmath import codes_per_word, load_fn, multiplier_table, qrange
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

MAX_PER_THREAD = 1024  # products one thread sums (tests/ops/expected_failures.MAX_REDUCTION_PER_THREAD)
QTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
# The rescale of the 64-bit total `a` by multiplier m and shift s, per CPU kernel (qmath.wgsl).
RESCALES = {
    "double": ("q_mbqm(bitcast<i32>(a.x), m, s)", "double"),  # 8-bit convs, BATCH_MATMUL with RHS zero point
    "single": ("q_mbqm_single(bitcast<i32>(a.x), m, s)", "single"),  # 8-bit FC, BATCH_MATMUL
    "int64": ("q_sat32(q_mbqm_i64(a, m, s))", "int64"),  # 16x8 convs, int16 BATCH_MATMUL
    "single64": ("q_sat32(q_mbqm_single64(a, m, s))", "single"),  # 16x8 FULLY_CONNECTED
}
_UNPACK = {np.dtype(np.int8): "q_unpack_i8x4", np.dtype(np.uint8): "q_unpack_u8x4"}
_ACC = {False: {"ACC": "i32", "ADD": "a + p", "WIDE": "q_i64(a)"},
        True: {"ACC": "vec2<u32>", "ADD": "q_add64(a, q_i64(p))", "WIDE": "a"}}


def exact_case(x_index: int):
    """The ``register_case`` predicate: ``quantized="exact"`` and integer codes at input ``x_index``."""
    def applies(node: Node, ctx: GpuContext) -> bool:
        return (ctx.quantized == "exact" and len(node.inputs) > x_index and node.inputs[x_index] >= 0
                and ctx.in_info(x_index).dtype in QTYPES)
    return applies


def product_programs(node: Node, ctx: GpuContext, name: str, source: str, params: list, *, x: TensorRef,
                     w_dtype: np.dtype, depth: int, reals: np.ndarray, form: str, bias_index: int, x_zp: int,
                     w_zp: int, zp_out: int, lo: int, hi: int, word_path: bool = False) -> list[Program]:
    """The dispatches of an integer product whose op source (``wgsl/<source>.wgsl``, with
    ``params``) defines ``dot``: one, or two for a dot product past :data:`MAX_PER_THREAD`.

    ``word_path``: the source defines ``dot4`` instead, the four codes of an output word at once
    from whole words of 8-bit codes (the callers check that channels, and ``depth``, come in
    fours); the same integers, a quarter of the loads."""
    if has_fused(node):
        raise ctx.unsupported("fused work on an integer node")
    out = ctx.output(0)
    expr, shifts = RESCALES[form]
    try:
        table = multiplier_table(ctx, reals, shifts)
    except ValueError as e:
        raise ctx.unsupported(str(e)) from None
    per = codes_per_word(out.dtype)
    common = [("elems", "u32", out.size), ("depth", "u32", depth), ("out_c", "u32", out.shape[-1]),
              ("mul_n", "u32", np.size(reals)), ("mul_off", "u32", table.offset),
              ("bias_off", "u32", _bias(ctx, bias_index, out.shape[-1]).offset), ("out_zp", "i32", zp_out),
              ("lo", "i32", lo), ("hi", "i32", hi), ("out_off", "u32", out.offset)]
    operands = [("x_zp", "i32", x_zp), ("w_zp", "i32", w_zp), ("x_off", "u32", x.offset), *params]
    out_subs = {"RESCALE": expr, "PER": str(per), "PACK": "q_byte" if per == 4 else "q_half"}
    if word_path:
        subs = {**out_subs, "UX": _UNPACK[x.dtype], "UW": _UNPACK[np.dtype(w_dtype)]}
        one, first = "qgemm4", "qgemm4_part"
    else:
        subs = {**out_subs, **_ACC[x.dtype == np.int16], "LX": load_fn(x.dtype), "LW": load_fn(w_dtype)}
        one, first = "qgemm", "qgemm_part"
    words = -(-out.size // per)
    if depth <= MAX_PER_THREAD:
        return [make_program(name, (source, one), common + operands, words, word="u32",
                             reduction_per_thread=max(depth, 1), **subs)]
    slices = -(-depth // MAX_PER_THREAD)
    slice_k = 4 * -(-depth // (4 * slices)) if word_path else -(-depth // slices)
    part = ctx.scratch((2 * out.size * slices,))
    split = [("slices", "u32", slices), ("slice_k", "u32", slice_k), ("part_off", "u32", part.offset)]
    return [make_program(f"{name} (partial sums)", (source, first), common + operands + split,
                         (words if word_path else out.size) * slices, word="u32", reduction_per_thread=slice_k,
                         **subs),
            make_program(f"{name} (rescale)", "qgemm_sum", common + split, words, word="u32",
                         reduction_per_thread=slices, **out_subs)]


def _bias(ctx: GpuContext, index: int, channels: int) -> TensorRef:
    """The bias (int32 or int64, or zeros without one) as int64 words, two per channel."""
    b = np.zeros(channels, np.int64)
    if index >= 0 and ctx.has_input(index):
        c = ctx.const(index)
        if c is None or c.dtype not in (np.int32, np.int64) or c.size != channels:
            got = "computed at run time" if c is None else f"{c.dtype} {c.shape}"
            raise ctx.unsupported(f"bias must be a constant int32/int64 of {channels} values, got {got}")
        b[:] = c.reshape(-1)
    return ctx.upload(b.view(np.int32))


@register_case(Op.FULLY_CONNECTED, "webgpu", exact_case(0))
def fully_connected(node: Node, ctx: GpuContext) -> list[Program]:
    """FULLY_CONNECTED as ``fully_connected.py``'s ``_quantized``: single rounding; per-tensor
    weights take the float32 product of the scales."""
    x, out = ctx.input(0), ctx.output(0)
    w = ctx.const(1)
    if w is None or w.ndim != 2 or getattr(node.options, "weights_format", 0) != 0:
        raise ctx.unsupported("needs constant 2-D weights in the default format")
    if node.activation and node.activation.clamp is None:
        raise ctx.unsupported(f"fused {node.activation}")  # the CPU kernel refuses it, as LiteRT
    units, depth = w.shape
    if depth == 0 or x.size % depth or out.size != x.size // depth * units or out.shape[-1] != units:
        raise ctx.unsupported(f"input {x.shape} by weights {w.shape} does not give {out.shape}")
    q = ctx.in_info(1).quant
    per_channel = w.dtype == np.int8 and q is not None and q.scale.size > 1
    reals, zp_w, zp_in, zp_out, lo, hi = rescale_factors(node, ctx, units, 0, float_product=not per_channel)
    if np.any(zp_w != zp_w[0]):
        raise ctx.unsupported("filter zero points differ by channel")
    word_path = x.dtype != np.int16 and depth % 4 == 0 and units % 4 == 0
    if word_path:  # the weights as [depth, units]: a word holds four units' weights of one feature
        params = [("w_off", "u32", ctx.upload(np.ascontiguousarray(w.T)).offset)]
    else:
        params = [("rows", "u32", x.size // depth), ("batch", "vec4u", [1, 1, 1, 1]),
                  ("sa", "vec4u", [0, 0, 0, 0]), ("sb", "vec4u", [0, 0, 0, 0]), ("a_m", "u32", depth),
                  ("a_k", "u32", 1), ("b_k", "u32", 1), ("b_n", "u32", depth), ("w_off", "u32", ctx.input(1).offset)]
    return product_programs(node, ctx, f"fully_connected {x.dtype} {x.shape}x{w.shape}",
                            "qmatmul4" if word_path else "qmatmul", params, x=x, w_dtype=w.dtype, depth=depth,
                            reals=reals, bias_index=2, x_zp=zp_in, w_zp=int(zp_w[0]), word_path=word_path,
                            form="single64" if x.dtype == np.int16 else "single", zp_out=zp_out, lo=lo, hi=hi)


@register_case(Op.BATCH_MATMUL, "webgpu", exact_case(0))
def batch_matmul(node: Node, ctx: GpuContext) -> list[Program]:
    """int8 / int16 BATCH_MATMUL as ``batch_matmul.py``'s ``_quantized`` (adj_x / adj_y, batch
    dims broadcast): single rounding with RHS zero point 0, else double; int16 the int64 form."""
    a, b, out = ctx.input(0), ctx.input(1), ctx.output(0)
    if not (a.dtype == b.dtype == out.dtype and a.dtype in (np.int8, np.int16)) or len(a.shape) < 2 \
            or len(b.shape) < 2:
        raise ctx.unsupported(f"{a.dtype} {a.shape} x {b.dtype} {b.shape} -> {out.dtype} (int8 or int16, rank >= 2)")
    adj_x, adj_y = bool(getattr(node.options, "adj_x", False)), bool(getattr(node.options, "adj_y", False))
    m, k = a.shape[-2:][::-1] if adj_x else a.shape[-2:]
    k2, n = b.shape[-2:][::-1] if adj_y else b.shape[-2:]
    try:
        batch = tuple(np.broadcast_shapes(a.shape[:-2], b.shape[:-2]))
    except ValueError:
        raise ctx.unsupported(f"batch dims of {a.shape} and {b.shape} do not broadcast") from None
    if k != k2 or out.shape != (*batch, m, n):
        raise ctx.unsupported(f"{a.shape} x {b.shape} (adj {adj_x}, {adj_y}) does not give {out.shape}")
    dims, sa, sb = broadcast_strides(a.shape[:-2], b.shape[:-2], batch)
    if len(dims) > 4:
        raise ctx.unsupported(f"{len(dims)} batch dims after merging (kernel has 4)")
    real, zl, zr, zo = quantized_rescale(node, ctx)
    pad = 4 - len(dims)
    params = [("rows", "u32", m), ("batch", "vec4u", [1] * pad + dims),
              ("sa", "vec4u", [0] * pad + [s * m * k for s in sa]),
              ("sb", "vec4u", [0] * pad + [s * k * n for s in sb]),
              ("a_m", "u32", 1 if adj_x else k), ("a_k", "u32", m if adj_x else 1),
              ("b_k", "u32", 1 if adj_y else n), ("b_n", "u32", k if adj_y else 1), ("w_off", "u32", b.offset)]
    form = "int64" if a.dtype == np.int16 else "single" if zr == 0 else "double"
    return product_programs(node, ctx, f"batch_matmul {a.dtype} {a.shape}x{b.shape}", "qmatmul", params, x=a,
                            w_dtype=b.dtype, depth=k, reals=np.array([real]), form=form, bias_index=-1, x_zp=zl,
                            w_zp=zr, zp_out=zo, lo=qrange(out.dtype)[0], hi=qrange(out.dtype)[1])


for _op in (Op.FULLY_CONNECTED, Op.BATCH_MATMUL, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.TRANSPOSE_CONV):
    declare_int8("webgpu", _op)
