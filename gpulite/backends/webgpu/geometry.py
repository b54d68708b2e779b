"""Shape arithmetic shared by the spatial kernels (TFLite's padding rules)."""

from __future__ import annotations

from gpulite.graph.shape_rules import conv as conv_rules
from gpulite.model import schema_gen as sg


def pad_before(padding: int, in_size: int, out_size: int, k: int, stride: int, dilation: int) -> int:
    """Leading padding of one spatial dim, as TFLite's ``ComputePaddingHeightWidth``.

    TFLite derives the padding from the output size; the model's stored output size is used
    here, which equals TFLite's own for every valid model.
    """
    if padding == sg.Padding.VALID:
        return 0
    effective = (k - 1) * dilation + 1
    return max((out_size - 1) * stride + effective - in_size, 0) // 2



def check_window(ctx, opts, in_shape: tuple[int, ...], out_shape: tuple[int, ...], kh: int, kw: int,
                 dilated: bool = True) -> None:
    """Decline (to the CPU kernel, which reports the ShapeError) when the model's stored output
    height/width is not what TFLite computes: the padding below is derived from it."""
    sh, sw = opts.stride_h or 1, opts.stride_w or 1
    dh, dw = (opts.dilation_h_factor or 1, opts.dilation_w_factor or 1) if dilated else (1, 1)
    want = (conv_rules.out_size(opts.padding, in_shape[1], kh, sh, dh),
            conv_rules.out_size(opts.padding, in_shape[2], kw, sw, dw))
    if tuple(out_shape[1:3]) != want:
        raise ctx.unsupported(f"output {out_shape} is not {want[0]}x{want[1]} for input {in_shape}")
