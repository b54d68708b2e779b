"""MAX_POOL_2D and AVERAGE_POOL_2D (float32, NHWC, fused activation): one output per thread,
or, when one window covers the whole image (global pooling), cooperating workgroups
(:func:`~.reduce.row_programs`)."""

from __future__ import annotations

from dataclasses import dataclass

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
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


@dataclass(frozen=True)
class Window:
    """A 2-D pool's geometry: input and output sizes, filter, strides and the padding before."""

    ih: int
    iw: int
    c: int
    oh: int
    ow: int
    kh: int
    kw: int
    sh: int
    sw: int
    pad_top: int
    pad_left: int

    @property
    def whole_image(self) -> bool:
        """One window covers every pixel (a global pool: a row reduction over H and W)."""
        return (self.oh == self.ow == 1 and self.pad_top <= 0 and self.pad_left <= 0
                and self.kh - self.pad_top >= self.ih and self.kw - self.pad_left >= self.iw)

    def params(self) -> list:
        """pool2d.wgsl's / qpool2d.wgsl's geometry params."""
        return [
            ("in_h", "u32", self.ih), ("in_w", "u32", self.iw), ("c", "u32", self.c), ("out_h", "u32", self.oh),
            ("out_w", "u32", self.ow), ("k_h", "u32", self.kh), ("k_w", "u32", self.kw),
            ("stride_h", "u32", self.sh), ("stride_w", "u32", self.sw),
            ("pad_top", "i32", self.pad_top), ("pad_left", "i32", self.pad_left),
        ]


def window(node: Node, ctx: GpuContext, x: TensorRef, out: TensorRef) -> Window:
    """The checked NHWC geometry of a MAX_POOL_2D / AVERAGE_POOL_2D (float32 or integer)."""
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
    return Window(ih, iw, c, oh, ow, kh, kw, sh, sw,
                  pad_before(opts.padding, ih, oh, kh, sh, 1), pad_before(opts.padding, iw, ow, kw, sw, 1))


def _pool(init: str, reduce: str, finish: str, global_finish: str):
    def factory(node: Node, ctx: GpuContext) -> Program | list[Program]:
        x, out = ctx.input(0), ctx.output(0)
        ctx.require_f32(x, out)
        w = window(node, ctx, x, out)
        if w.whole_image:
            kept, red = split_dims(x.shape, {1, 2})  # the window holds every pixel: reduce H and W
            return row_programs(ctx, f"global {node.op.lower()} {x.shape}->{out.shape}", x.offset, out.offset,
                                kept, red, word="f32", init=init, update=reduce, finish=global_finish,
                                act=node.activation)
        params = [*w.params(), ("x_off", "u32", x.offset), ("out_off", "u32", out.offset)]
        return make_program(f"{node.op.lower()} {x.shape}->{out.shape} k{w.kh}x{w.kw}", "pool2d", params, out.size,
                            act=node.activation, INIT=init, REDUCE=reduce, FINISH=finish,
                            reduction_per_thread=w.kh * w.kw)
    return factory


for _op, _kind in _KINDS.items():
    register_kernel(_op, "webgpu", _pool(*_kind))
