"""Integer matrix products on the GPU (``quantized="exact"``), the part they share:
:func:`product_programs` (FULLY_CONNECTED and BATCH_MATMUL: kernels/qmatmul.py; the
convolutions: kernels/qconv.py).

Each is a case of its op (:func:`~gpulite.backends.kernels.register_case`) taking the nodes
with int8 / uint8 / int16 codes under ``quantized="exact"``, and computes what its CPU kernel
(``backends/cpu/kernels/fully_connected.py``, ``batch_matmul.py``, ``quantized_conv.py``,
``transpose_conv.py``) computes, bit for bit: the sums of ``(x - zp_x) * (w - zp_w)`` in
TFLite's int32 accumulator (int64 for int16 inputs), plus the int32 / int64 bias, rescaled by
the rescale default LiteRT applies (:data:`RESCALES`: for the 8-bit convs and FULLY_CONNECTED
its XNNPACK delegate takes, XNNPACK's float32 requantization, ``q_fp32``; for those it runs on
its optimized builtin kernels, their NEON / ruy rounding, ``q_mbqm_neon``; else a
``MultiplyByQuantizedMultiplier`` form: double rounding, single rounding (16x8 FC), the int64 overload;
wgsl/qmath.wgsl), plus the output zero point, clamped to the fused activation's range. The
multipliers are the CPU kernels' own factors (``quantized_conv.rescale_factors`` /
``conv_scales``, ``batch_matmul.quantized_rescale``).

One thread makes one output word (4 int8 or 2 int16 codes, so no two threads write a word),
each code from its own dot product. A dot product longer than :data:`MAX_PER_THREAD` is cut into
slices: a first dispatch writes each slice's 64-bit partial sum, a second adds them, rescales
and packs (the same integers: the sums are exact).
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import declare_int8
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.kernels.epilogue import has_fused
from gpulite.backends.webgpu.kernels.qmath import codes_per_word, load_fn, multiplier_table
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

MAX_PER_THREAD = 1024  # products one thread sums (tests/ops/expected_failures.MAX_REDUCTION_PER_THREAD)
BLOCK = 4  # pixels one thread of a register-blocked program computes
QTYPES = (np.dtype(np.int8), np.dtype(np.uint8), np.dtype(np.int16))
# The rescale of the 64-bit total `a` by multiplier m and shift s, per CPU kernel (qmath.wgsl).
RESCALES = {
    "double": ("q_mbqm(bitcast<i32>(a.x), m, s)", "double"),  # reference-kernel convs, BATCH_MATMUL with RHS zero point
    # int8 TRANSPOSE_CONV and DEPTHWISE_CONV_2D in LiteRT's builtin kernels (quantized_conv's
    # transpose_conv_rescale, conv_rescale): the channels of whole blocks of 8 take the NEON
    # loop's rounding, the rest q_mbqm's
    "neon": ("select(q_mbqm(bitcast<i32>(a.x), m, s), q_mbqm_neon(bitcast<i32>(a.x), m, s), "
             "c < (P.out_c & ~7u))", "double"),
    # 8-bit CONV_2D and FULLY_CONNECTED in LiteRT's builtin kernels (ruy): every channel so
    "ruy": ("q_mbqm_neon(bitcast<i32>(a.x), m, s)", "double"),
    # uint8 TRANSPOSE_CONV in LiteRT's builtin kernel: the flat output's whole blocks of 16 elements
    # take the NEON loop's rounding, the rest q_mbqm's
    "neon16": ("select(q_mbqm(bitcast<i32>(a.x), m, s), q_mbqm_neon(bitcast<i32>(a.x), m, s), "
               "e < (P.elems & ~15u))", "double"),
    "int64": ("q_sat32(q_mbqm_i64(a, m, s))", "int64"),  # 16x8 convs, int16 BATCH_MATMUL
    "single64": ("q_sat32(q_mbqm_single64(a, m, s))", "single"),  # 16x8 FULLY_CONNECTED
    # 8-bit convs, FULLY_CONNECTED and BATCH_MATMUL XNNPACK takes (quantized_conv.xnnpack_conv,
    # fully_connected.fc_rescale, batch_matmul.xnnpack_fp32): m holds the float32 scale's bits
    "fp32": ("q_fp32(bitcast<i32>(a.x), bitcast<f32>(m), P.out_zp, P.lo, P.hi) - P.out_zp", None),
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
                     w_zp: int, zp_out: int, lo: int, hi: int, word_path: bool = False,
                     blocked: tuple[str, int, dict] | None = None) -> list[Program]:
    """The dispatches of an integer product whose op source (``wgsl/<source>.wgsl``, with
    ``params``) defines ``dot``: one, or two for a dot product past :data:`MAX_PER_THREAD`.

    ``word_path``: the source defines ``dot4`` instead, the four codes of an output word at once
    from whole words of 8-bit codes (the callers check that channels, and ``depth``, come in
    fours); the same integers, a quarter of the loads. ``blocked``: ``(source, threads, subs)`` of
    a register-blocked 8-bit program (a complete ``run``, :data:`BLOCK` pixels by four channels a
    thread, or qconv2d16r's for int16 codes; ``word_path`` must be set) used instead when the dot
    product fits one thread."""
    if has_fused(node):
        raise ctx.unsupported("fused work on an integer node")
    out = ctx.output(0)
    expr, shifts = RESCALES[form]
    if shifts is None:  # the table holds float32 scales, as [bits, 0] pairs
        scales = np.asarray(reals, np.float32).reshape(-1)
        table = ctx.upload(np.stack([scales.view(np.int32), np.zeros_like(scales.view(np.int32))], 1).reshape(-1))
    else:
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
    out_subs = {"RESCALE": expr, "PER": str(per), "PUT": "q_byte" if per == 4 else "q_half"}
    if word_path:
        subs = {**out_subs, "UW": _UNPACK[np.dtype(w_dtype)], "LX": load_fn(x.dtype),
                **({"UX": _UNPACK[x.dtype]} if x.dtype in _UNPACK else {})}
        one, first = ("qgemm4",), "qgemm4_part"
    else:
        subs = {**out_subs, **_ACC[x.dtype == np.int16], "LX": load_fn(x.dtype), "LW": load_fn(w_dtype)}
        one, first = ("qgemm", "qwords"), "qgemm_part"  # qwords packs out_code(e)
    words = -(-out.size // per)
    if blocked is not None and depth <= MAX_PER_THREAD:
        return [make_program(name, blocked[0], common + operands, blocked[1], word="u32",
                             reduction_per_thread=max(depth, 1), R=str(BLOCK), **subs, **blocked[2])]
    if depth <= MAX_PER_THREAD:
        return [make_program(name, (source, *one), common + operands, words, word="u32",
                             reduction_per_thread=max(depth, 1), **subs)]
    slices = -(-depth // MAX_PER_THREAD)
    slice_k = 4 * -(-depth // (4 * slices)) if word_path else -(-depth // slices)
    part = ctx.scratch((2 * out.size * slices,))
    split = [("slices", "u32", slices), ("slice_k", "u32", slice_k), ("part_off", "u32", part.offset)]
    return [make_program(f"{name} (partial sums)", (source, first), common + operands + split,
                         (words if word_path else out.size) * slices, word="u32", reduction_per_thread=slice_k,
                         **subs),
            make_program(f"{name} (rescale)", ("qgemm_sum", "qwords"), common + split, words, word="u32",
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


for _op in (Op.FULLY_CONNECTED, Op.BATCH_MATMUL, Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.TRANSPOSE_CONV):
    declare_int8("webgpu", _op)
