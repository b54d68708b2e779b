"""A float32 unary op (ELU, EXP, LOG, LOGISTIC, TANH, GELU, ...) whose input a DEQUANTIZE makes
from 8/16-bit codes, under ``quantized="exact"``: a table of the CPU kernels' outputs.

Converters leave a float op between integer ones where LiteRT has no integer kernel for it
(onnx2tf's 16x8 decoders: DEQUANTIZE -> ELU -> QUANTIZE). Its input then takes one of 256 or
65,536 values, so, as :mod:`.code_table` does for integer ops, the CPU backend's DEQUANTIZE and
the node's own CPU kernel are run at load on every code, and the GPU looks the result up: the
input's code is ``round(x / scale) + zero_point`` (exact: the DEQUANTIZE made ``x`` from it,
and ``|x / scale|`` stays below 2**16), the output the table's float32 there. So the GPU gives
the cpu backend's float32 values, bit for bit, where WGSL's ``exp`` and friends may be ulps off
(WGSL allows that), which the QUANTIZE after the op would turn into a code off by one.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_case
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.code_table import NARROW, cpu_kernel
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

OPS = (Op.ELU, Op.EXP, Op.LOG, Op.LOGISTIC, Op.TANH, Op.GELU, Op.SIN, Op.COS, Op.SQRT, Op.RSQRT, Op.HARD_SWISH)
_F32 = np.dtype(np.float32)


def _dequantize(node: Node, ctx: GpuContext) -> Node | None:
    """The DEQUANTIZE of per-tensor 8/16-bit codes making ``node``'s input, if one does."""
    src = node.inputs[0]
    for n in ctx.graph.nodes:
        if src in n.outputs:
            if n.op != Op.DEQUANTIZE or n.inputs[0] < 0:
                return None
            q = ctx.graph.tensors[n.inputs[0]]
            ok = q.dtype in NARROW and q.quant is not None and np.size(q.quant.scale) == 1
            return n if ok else None
    return None


def applies(node: Node, ctx: GpuContext) -> bool:
    """``quantized="exact"``, float32 in and out of one shape, the input a DEQUANTIZE's of codes."""
    if (ctx.quantized != "exact" or len(node.inputs) != 1 or len(node.outputs) != 1 or node.inputs[0] < 0
            or node.epilogue or node.prelu_alpha):
        return False
    x, y = ctx.in_info(0), ctx.out_info(0)
    return x.dtype == y.dtype == _F32 and x.shape == y.shape and _dequantize(node, ctx) is not None


def float_table(node: Node, ctx: GpuContext) -> np.ndarray:
    """The CPU kernels' ``node(DEQUANTIZE(code))`` for every code, float32, lowest code first."""
    dq = _dequantize(node, ctx)
    q = ctx.graph.tensors[dq.inputs[0]]
    info = np.iinfo(q.dtype)
    codes = np.arange(info.min, info.max + 1).astype(q.dtype)
    (c,), dequantize = cpu_kernel(dq, ctx, [codes.shape, codes.shape], infos=[q, ctx.in_info(0)])
    c[:] = codes
    (x,), run = cpu_kernel(node, ctx, [codes.shape, codes.shape])
    x[:] = dequantize()
    return run().astype(np.float32)


def table_kernel(node: Node, ctx: GpuContext) -> Program:
    """``out[e] = table[round(x[e] / scale) + zero_point - lowest code]``."""
    x, out = ctx.input(0), ctx.output(0)
    q = ctx.graph.tensors[_dequantize(node, ctx).inputs[0]]
    table = ctx.upload(float_table(node, ctx).view(np.int32))
    info = np.iinfo(q.dtype)
    params = [("elems", "u32", out.size), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
              ("t_off", "u32", table.offset), ("scale", "f32", float(q.quant.scale[0])),
              ("zp", "i32", int(q.quant.zero_point[0])), ("lo", "i32", info.min), ("hi", "i32", info.max)]
    return make_program(f"{node.op.lower()} of {q.dtype} codes {x.shape}", "dequantized_table", params,
                        out.size, word="u32")


for _op in OPS:
    register_case(_op, "webgpu", applies)(table_kernel)
