"""RFFT2D, COMPLEX_ABS, REAL and IMAG (complex64 tensors, as LiteRT's kernels take them).

RFFT2D crops or zero-pads the innermost two dims to the constant ``fft_length`` and runs the
real 2-D FFT in float64 (LiteRT's rfft2d.cc uses Ooura's double-precision ``rdft2d``), keeping
the ``fft_width // 2 + 1`` non-negative frequencies; the result is rounded to complex64.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.backend import CpuContext
from gpulite.backends.cpu.kernels.shape_ops import arity, check_out, unsupported
from gpulite.backends.kernels import register_kernel
from gpulite.graph.ir import Node
from gpulite.graph.shape_rules.signal import rfft2d_lengths
from gpulite.model.opdefs import Op

_C64, _F32 = np.dtype(np.complex64), np.dtype(np.float32)


@register_kernel(Op.RFFT2D, "cpu")
def rfft2d(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """Real 2-D FFT of the innermost two dims with the constant int32 ``fft_length``."""
    arity(node, 2)
    x, out = ctx.input(0), ctx.output(0)
    if x.dtype != _F32 or ctx.in_info(1).dtype != np.int32 or out.dtype != _C64:
        raise unsupported(node, f"expected float32 input, int32 fft_length and a complex64 output, got {x.dtype}, "
                          f"{ctx.in_info(1).dtype} -> {out.dtype}")
    if ctx.const(1) is None:
        raise unsupported(node, "fft_length is computed at run time; gpulite needs it constant (the output's shape)")
    h, w = rfft2d_lengths(node, x.shape, ctx.const(1))
    check_out(node, out, (*x.shape[:-2], h, w // 2 + 1))

    def run() -> None:
        out[...] = np.fft.rfft2(x.astype(np.float64), s=(h, w))
    return run


_PARTS: dict[str, Callable[[np.ndarray, np.ndarray], object]] = {
    Op.COMPLEX_ABS: lambda z, out: np.abs(z, out=out),
    Op.REAL: lambda z, out: np.copyto(out, z.real),
    Op.IMAG: lambda z, out: np.copyto(out, z.imag),
}


def _complex_part(node: Node, ctx: CpuContext) -> Callable[[], None]:
    """|z|, Re z or Im z of a complex64 input as float32 (complex128 -> float64)."""
    arity(node, 1)
    z, out = ctx.input(0), ctx.output(0)
    want = {np.dtype(np.complex64): _F32, np.dtype(np.complex128): np.dtype(np.float64)}.get(z.dtype)
    if want is None or out.dtype != want:
        raise unsupported(node, f"expected complex64 -> float32 or complex128 -> float64, got {z.dtype} -> "
                          f"{out.dtype}")
    check_out(node, out, z.shape)
    part = _PARTS[node.op]

    def run() -> None:
        part(z, out)
    return run


for _op in _PARTS:
    register_kernel(_op, "cpu", _complex_part)
