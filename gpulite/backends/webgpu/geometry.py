"""Shape arithmetic shared by the spatial kernels (TFLite's padding rules)."""

from __future__ import annotations

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

