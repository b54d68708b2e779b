"""ARG_MAX and ARG_MIN (float32, int32, int8, uint8 input; int32 or int64 output), as
cooperating workgroups (``arg.wgsl``)."""

from __future__ import annotations

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.reduce import ROW_GROUP, TARGET, _pow2, subgroups
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph import layout
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# Input dtype -> (WGSL value type, load of element e from the u32 view of the arena).
_LOADS = {
    np.dtype(np.float32): ("f32", "bitcast<f32>(buf[P.x_off + e])"),
    np.dtype(np.int32): ("i32", "bitcast<i32>(buf[P.x_off + e])"),
    np.dtype(np.uint8): ("i32", "i32((buf[P.x_off + e / 4u] >> ((e % 4u) * 8u)) & 0xffu)"),
    np.dtype(np.int8): ("i32", "bitcast<i32>(buf[P.x_off + e / 4u] << (24u - (e % 4u) * 8u)) >> 24u"),
}


def _arg(cmp: str):
    def factory(node: Node, ctx: GpuContext) -> Program:
        x, out = ctx.input(0), ctx.output(0)
        if x.dtype not in _LOADS or out.dtype not in (np.dtype(np.int32), np.dtype(np.int64)):
            raise ctx.unsupported(f"{x.dtype} -> {out.dtype}")
        axis = layout.ints(ctx.const(1)) if ctx.const(1) is not None else []
        if len(axis) != 1:
            raise ctx.unsupported(f"axis {axis or 'computed at run time'} (expected one constant)")
        rank = len(x.shape)
        a = axis[0] + rank if axis[0] < 0 else axis[0]
        if not 0 <= a < rank or x.shape[a] == 0 or out.shape != x.shape[:a] + x.shape[a + 1:]:
            raise ctx.unsupported(f"axis {axis[0]} of {x.shape} does not give {out.shape}")
        typ, load = _LOADS[x.dtype]
        r, inner = x.shape[a], int(np.prod(x.shape[a + 1:], dtype=np.int64))
        need = _pow2(-(-r // TARGET))
        lanes_on_cols = inner > 1  # neighbouring outputs read neighbouring words
        split = min(ROW_GROUP // min(_pow2(inner), 32), need) if lanes_on_cols else min(ROW_GROUP, need)
        cols = ROW_GROUP // split
        params = [("r", "u32", r), ("inner", "u32", inner), ("outs", "u32", out.size), ("cols", "u32", cols),
                  ("split", "u32", split), ("lanes_on_cols", "u32", int(lanes_on_cols)),
                  ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        isnan = "(bitcast<u32>(v) & 0x7fffffffu) > 0x7f800000u" if typ == "f32" else "false"
        return make_program(f"{node.op.lower()} {x.shape} axis {a} ({split} threads an output)", "arg", params,
                            -(-out.size // cols), word="u32", workgroup_size=ROW_GROUP, groups=True,
                            subgroups=subgroups(ctx),
                            reduction_per_thread=-(-r // split), T=typ, LOAD=load, CMP=cmp, ISNAN=isnan,
                            OW=str(out.dtype.itemsize // 4))
    return factory


register_kernel(Op.ARG_MAX, "webgpu", _arg(">"))
register_kernel(Op.ARG_MIN, "webgpu", _arg("<"))
