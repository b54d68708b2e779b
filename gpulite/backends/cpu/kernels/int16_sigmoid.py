"""int16 LOGISTIC and TANH (the 16x8 quantization mode) as LiteRT computes them, as a table.

LiteRT runs them in TFLite's builtin kernels (XNNPACK has no int16), ``activations.cc``:
zero points 0, an output scale of 2**-15 (LOGISTIC: exactly; TANH: within ``CheckedLog2``'s
1e-3). Prepare rescales the input to units of 1/(3 * 4096) (so that +-2**17 is +-10.7): in
double, ``s_in * 4096 * 3`` doubled while it is <= 32767 / 2 (at most 31 times), the doublings
counted as a right shift, the product truncated to the int32 multiplier. Eval
(``reference_integer_ops::Logistic`` / ``Tanh``): ``(x * multiplier + round) >> shift``, then a
linear interpolation in a 256-entry table of sigmoid(i / 24) in 0.16 fixed point (9 fraction bits
for LOGISTIC; TANH reads sigmoid(2x) with 8, as ``tanh(x) = 2 sigmoid(2x) - 1``).

An input scale that is a power of two with shift 0 (2**-12; TANH also 2**-11, its input doubled
with saturation first) leaves the multiplier 0, and then LiteRT's default kernel takes gemmlowp's
fixed-point ``logistic``/``tanh`` on Q3.12 instead (:func:`.recurrent_int8.gemmlowp_table`, as the
integer LSTM's gates; LiteRT's reference kernel still uses the table there, with multiplier
3 << shift, and differs). Every int16 code is checked against LiteRT in ``tests/ops/test_int8_gaps.py``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.cpu.kernels.lookup import int_lut
from gpulite.backends.cpu.kernels.quantized_activations import unary_params
from gpulite.backends.cpu.kernels.recurrent_int8 import gemmlowp_table
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

# TFLite's sigmoid_table_uint16 (kernels/internal/common.h, Apache-2.0): sigmoid(i / 24) in 0.16
# fixed point, i = 0..255; within one code of round(65536 / (1 + exp(-i / 24))), not a formula.
SIGMOID_TABLE = np.array([
    32768, 33451, 34133, 34813, 35493, 36169, 36843, 37513, 38180, 38841, 39498, 40149, 40794, 41432, 42064, 42688,
    43304, 43912, 44511, 45102, 45683, 46255, 46817, 47369, 47911, 48443, 48964, 49475, 49975, 50464, 50942, 51409,
    51865, 52311, 52745, 53169, 53581, 53983, 54374, 54755, 55125, 55485, 55834, 56174, 56503, 56823, 57133, 57433,
    57724, 58007, 58280, 58544, 58800, 59048, 59288, 59519, 59743, 59959, 60168, 60370, 60565, 60753, 60935, 61110,
    61279, 61441, 61599, 61750, 61896, 62036, 62172, 62302, 62428, 62549, 62666, 62778, 62886, 62990, 63090, 63186,
    63279, 63368, 63454, 63536, 63615, 63691, 63765, 63835, 63903, 63968, 64030, 64090, 64148, 64204, 64257, 64308,
    64357, 64405, 64450, 64494, 64536, 64576, 64614, 64652, 64687, 64721, 64754, 64786, 64816, 64845, 64873, 64900,
    64926, 64950, 64974, 64997, 65019, 65039, 65060, 65079, 65097, 65115, 65132, 65149, 65164, 65179, 65194, 65208,
    65221, 65234, 65246, 65258, 65269, 65280, 65291, 65301, 65310, 65319, 65328, 65337, 65345, 65352, 65360, 65367,
    65374, 65381, 65387, 65393, 65399, 65404, 65410, 65415, 65420, 65425, 65429, 65433, 65438, 65442, 65445, 65449,
    65453, 65456, 65459, 65462, 65465, 65468, 65471, 65474, 65476, 65479, 65481, 65483, 65485, 65488, 65489, 65491,
    65493, 65495, 65497, 65498, 65500, 65501, 65503, 65504, 65505, 65507, 65508, 65509, 65510, 65511, 65512, 65513,
    65514, 65515, 65516, 65517, 65517, 65518, 65519, 65520, 65520, 65521, 65522, 65522, 65523, 65523, 65524, 65524,
    65525, 65525, 65526, 65526, 65526, 65527, 65527, 65528, 65528, 65528, 65529, 65529, 65529, 65529, 65530, 65530,
    65530, 65530, 65531, 65531, 65531, 65531, 65531, 65532, 65532, 65532, 65532, 65532, 65532, 65533, 65533, 65533,
    65533, 65533, 65533, 65533, 65533, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65534, 65535,
], np.int64)
_CODES = np.arange(-32768, 32768, dtype=np.int64)


def checked_log2(scale: float) -> tuple[bool, int]:
    """TFLite's ``CheckedLog2`` in float32: (log2 within 1e-3 of an integer, that integer)."""
    f = np.float32
    lg = f(np.log(f(scale))) * (f(1.0) / f(np.log(f(2.0))))
    rounded = f(np.sign(lg) * np.floor(abs(lg) + f(0.5)))  # std::round: halves away from zero
    return bool(abs(lg - rounded) < f(1e-3)), int(rounded)


def input_rescale(scale: float) -> tuple[int, int]:
    """Prepare's (multiplier, right shift) onto units of 1/(3 * 4096), in double as the C++."""
    multiplier, shift = float(np.float32(scale)) * 4096.0 * 3.0, 0
    while multiplier <= 32767.0 / 2.0 and shift <= 30:
        shift += 1
        multiplier *= 2.0
    return int(multiplier), shift


def _scaled(multiplier: int, shift: int) -> np.ndarray:
    rnd = 1 << (shift - 1) if shift > 0 else 0
    prod = (_CODES * multiplier + rnd + (1 << 31)) % (1 << 32) - (1 << 31)  # int32 arithmetic: an input
    return prod >> shift  # scale above ~1.3 leaves the multiplier unshifted and x * m wraps, as in C


def logistic_table(multiplier: int, shift: int) -> np.ndarray:
    """``reference_integer_ops::Logistic`` on every int16 code (index 0 is -32768)."""
    x = _scaled(multiplier, shift)
    a = np.abs(x)
    hi = np.minimum(a >> 9, 254)
    lo_v, hi_v = SIGMOID_TABLE[hi], SIGMOID_TABLE[hi + 1]
    res = np.where((a >> 9) >= 255, 0x7FFF << 10, (lo_v << 9) + (a & 0x1FF) * (hi_v - lo_v))
    res = np.where(x >= 0, res + (1 << 9), (1 << 25) - res + (1 << 9) - 1)
    return res >> 10


def tanh_table(multiplier: int, shift: int) -> np.ndarray:
    """``reference_integer_ops::Tanh`` on every int16 code (index 0 is -32768)."""
    x = _scaled(multiplier, shift)
    a = np.abs(x)
    hi = np.minimum(a >> 8, 254)
    lo_v, hi_v = SIGMOID_TABLE[hi], SIGMOID_TABLE[hi + 1]
    res = np.where((a >> 8) >= 255, 0xFFFF << 8, (lo_v << 8) + (a & 0xFF) * (hi_v - lo_v))
    res = np.where(x >= 0, res - (1 << 23) + (1 << 7), -res + (1 << 23) + (1 << 7) - 1)
    return res >> 8


def int16_sigmoid(node: Node, ctx) -> Callable[[], None]:
    """Factory for int16 LOGISTIC and TANH (see the module docstring)."""
    si, zi, so, zo, _ = unary_params(node, ctx)  # int16 in and out (the caller takes int16 inputs)
    logistic = node.op == Op.LOGISTIC
    pot, out_log2 = checked_log2(so)
    exact_out = so == 1.0 / 32768 if logistic else pot and out_log2 == -15
    if zi != 0 or zo != 0 or not exact_out:
        need = "exactly 2**-15" if logistic else "2**-15 (within CheckedLog2's 1e-3)"
        raise UnsupportedOpError(node.op, node.index, "cpu", f"int16 {node.op} needs zero points 0 and an output "
                                 f"scale of {need}, as LiteRT; got zero points {zi}, {zo} and scale {so}")
    in_pot, in_log2 = checked_log2(si)
    shift = 12 + in_log2
    if in_pot and shift in ((0,) if logistic else (0, 1)):  # gemmlowp on Q3.12
        codes = np.clip(_CODES << shift, -32768, 32767)  # SaturatingRoundingMultiplyByPOT<1> when shift is 1
        table = gemmlowp_table("sigmoid" if logistic else "tanh", 3)[codes + 32768]
    else:
        table = (logistic_table if logistic else tanh_table)(*input_rescale(si))
    return int_lut(table, ctx)
