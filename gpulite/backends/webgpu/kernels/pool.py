"""MAX_POOL_2D and AVERAGE_POOL_2D (float32, NHWC, fused activation): one output per thread,
or, when one window covers the whole image (global pooling), cooperating workgroups
(:func:`~.reduce.row_programs`)."""

from __future__ import annotations

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.geometry import check_window, pad_before
from gpulite.backends.webgpu.kernels.reduce import row_programs, split_dims
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.graph.ir import Node
from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op

# (initial value, per-cell update of acc with v, final value from acc and count, the same
# for a global pool's row reduction where P.total counts the cells)
_KINDS = {
    Op.MAX_POOL_2D: ("-3.402823e38", "max(acc, v)", "acc", "acc"),
    Op.AVERAGE_POOL_2D: ("0.0", "acc + v", "acc / max(count, 1.0)", "acc / f32(P.total)"),
}


def _pool(init: str, reduce: str, finish: str, global_finish: str):
    def factory(node: Node, ctx: GpuContext) -> Program | list[Program]:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_f32(x, out)
        if len(x.shape) != 4 or len(out.shape) != 4 or x.shape[3] != out.shape[3]:
            raise ctx.unsupported(f"shapes {x.shape} -> {out.shape} (expected NHWC, same channels)")
        opts = node.options or sg.Pool2DOptions()
        _, ih, iw, c = x.shape
        _, oh, ow, _ = out.shape
        kh, kw = opts.filter_height, opts.filter_width
        sh, sw = opts.stride_h or 1, opts.stride_w or 1
        if kh < 1 or kw < 1:
            raise ctx.unsupported(f"filter {kh}x{kw}")
        check_window(ctx, opts, x.shape, out.shape, kh, kw, dilated=False)
        pad_top, pad_left = pad_before(opts.padding, ih, oh, kh, sh, 1), pad_before(opts.padding, iw, ow, kw, sw, 1)
        if oh == ow == 1 and pad_top <= 0 and pad_left <= 0 and kh - pad_top >= ih and kw - pad_left >= iw:
            kept, red = split_dims(x.shape, {1, 2})  # the window holds every pixel: reduce H and W
            return row_programs(ctx, f"global {node.op.lower()} {x.shape}->{out.shape}", x.offset, out.offset,
                                kept, red, word="f32", init=init, update=reduce, finish=global_finish,
                                act=node.activation)
        params = [
            ("in_h", "u32", ih), ("in_w", "u32", iw), ("c", "u32", c), ("out_h", "u32", oh), ("out_w", "u32", ow),
            ("k_h", "u32", kh), ("k_w", "u32", kw), ("stride_h", "u32", sh), ("stride_w", "u32", sw),
            ("pad_top", "i32", pad_top), ("pad_left", "i32", pad_left),
            ("x_off", "u32", x.offset), ("out_off", "u32", out.offset),
        ]
        return make_program(f"{node.op.lower()} {x.shape}->{out.shape} k{kh}x{kw}", "pool2d", params, out.size,
                            act=node.activation, INIT=init, REDUCE=reduce, FINISH=finish,
                            reduction_per_thread=kh * kw)
    return factory


for _op, _kind in _KINDS.items():
    register_kernel(_op, "webgpu", _pool(*_kind))
