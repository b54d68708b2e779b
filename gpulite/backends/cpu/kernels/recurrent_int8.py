"""The full-integer LSTM (int8 activations, int16 cell state), bit-exact with LiteRT's
``EvalInteger8x8_16`` (``lstm_eval.cc``): the UNIDIRECTIONAL_SEQUENCE_LSTM the converter writes
for a full-int8 Keras LSTM, which LiteRT's default interpreter runs with its builtin kernel
(XNNPACK takes no LSTM), and the one-step LSTM op (one time step of the same kernel).

The parameters are LiteRT's ``PopulateQuantizedLstmParams8x8_16`` and
``PopulatePrecomputedZPTimesWeightsWithBias``: each gate's input and recurrent products are
rescaled on their own (an effective scale each, ``weight_scale * activation_scale / gate_scale``)
to the gate's int16 fixed point, Q3.12 without layer norm, else the scale of the node's
intermediate tensor of that gate; the activations' zero points are folded into the biases
(``-zp * row sum``; with layer norm the gate bias goes to the layer norm instead). Each step
(``LstmStepInteger8x8_16``) per gate: ``clamp16(rescale(W_x x + b_x))``, plus
``rescale(W_h h + b_h)`` (clamped), plus the rescaled peephole product ``w_c * c`` (clamped),
the integer layer norm (``ApplyLayerNorm``), then gemmlowp's int16 fixed-point sigmoid on Q3.12
(tanh for the cell gate). The cell: ``c = rdpot(f * c, 15) + rdpot(i * g, 30 + cell_scale)``
(int16, saturating; ``i = 32767 - f`` with CIFG), clipped; the hidden state ``rescale(o * tanh(c))``
(the intermediate tensor 4 holds its scale and zero point ``hidden_zp``). Without projection the
output is ``clamp8(hidden + hidden_zp)``. With projection weights LiteRT stores
``clamp8(hidden - hidden_zp)`` and folds ``+hidden_zp * row sum`` into the projection bias (as its
``CwiseMul`` and ``PopulatePrecomputedZPTimesWeightsWithBias`` read), so the sign of the zero point
differs between the two and only the clamp tells them apart; both measured against LiteRT 2.3
(saturated hidden states, zero points other than the output's). The output is then
``clamp8(rescale(P h + b) + output_zp)``, clipped. Peephole weights with a projection to another
width than the cell count are refused (LiteRT applies them to the first ``n_output`` cells only).

gemmlowp's sigmoid and tanh on int16 take 65536 inputs: each is computed once over all of them
(:func:`gemmlowp_table`), with gemmlowp's int16 arithmetic (wrapping adds, saturating rounding doubling
high multiplies, its constants rounded from their int32 form), and looked up per step.

The 8x8_8 variant (12 intermediate tensors) is refused.
"""

from __future__ import annotations

import math
from functools import cache

import numpy as np

from gpulite.backends.cpu.kernels.quantized_l2norm import inv_sqrt_multiplier
from gpulite.backends.cpu.quant import multiply_by_quantized_multiplier as _mbqm
from gpulite.backends.cpu.quant import quantize_multiplier, rounding_divide_by_pot
from gpulite.errors import ShapeError, UnsupportedOpError

_I64 = np.int64
_F32 = np.float32
_PEEPHOLE = {0: 0, 1: 1, 3: 2}  # gate -> its peephole weights (the cell gate has none)


# -- gemmlowp's int16 fixed point, on int64 arrays ------------------------------------------

def _w16(x: np.ndarray) -> np.ndarray:
    """int16 wraparound (C's conversion of an int result back to int16)."""
    return ((x + (1 << 15)) & 0xFFFF) - (1 << 15)


def _div(x: np.ndarray, d: int) -> np.ndarray:
    """C's integer division (truncating toward zero) by a positive ``d``."""
    return np.where(x >= 0, x // d, -((-x) // d))


def _srdhm16(a: np.ndarray | int, b: np.ndarray | int) -> np.ndarray:
    """int16 ``SaturatingRoundingDoublingHighMul``."""
    a, b = np.asarray(a, _I64), np.asarray(b, _I64)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = np.where(nudged >= 0, nudged >> 15, -((-nudged) >> 15))
    return np.where((a == -32768) & (b == -32768), 32767, _w16(high))


def _shl16(x: np.ndarray, exponent: int) -> np.ndarray:
    """int16 ``SaturatingRoundingMultiplyByPOT<exponent>`` for exponent >= 0."""
    threshold = (1 << (15 - exponent)) - 1
    return np.where(x > threshold, 32767, np.where(x < -threshold, -32768, x << exponent))


def _const16(raw32: int) -> int:
    """A gemmlowp constant given in int32 fixed point, rounded to int16 (``RescaleConstantInitializer``)."""
    return int(rounding_divide_by_pot(raw32, 16))


def _exp_quarter(a: np.ndarray) -> np.ndarray:
    """``exp_on_interval_between_negative_one_quarter_and_0_excl`` (Q0.15)."""
    term, third = _const16(1895147668), _const16(715827883)
    x = _w16(a + (1 << 12))
    x2 = _srdhm16(x, x)
    x3 = _srdhm16(x2, x)
    x4 = _srdhm16(x2, x2)
    t = _w16(_srdhm16(_w16(rounding_divide_by_pot(x4, 2) + x3), third) + x2)
    t = _w16(x + rounding_divide_by_pot(t, 1))
    return np.clip(term + _srdhm16(term, t), -32768, 32767)  # AddSaturatingIf16Bit


def _exp_negative(a: np.ndarray, ibits: int) -> np.ndarray:
    """``exp_on_negative_values`` of Q(ibits) ``a`` <= 0, as Q0.15."""
    fbits = 15 - ibits
    quarter = 1 << (fbits - 2)
    amq = _w16((a & (quarter - 1)) - quarter)
    result = _exp_quarter(_shl16(amq, ibits))
    remainder = _w16(amq - a)
    for exponent, mult in ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
                           (2, 39332535), (3, 720401), (4, 242)):
        if ibits > exponent:
            hit = (remainder & (1 << (fbits + exponent))) != 0
            result = np.where(hit, _srdhm16(result, _const16(mult)), result)
    if ibits > 5:
        result = np.where(a < _const16(-(1 << (36 - ibits))), 0, result)
    return np.where(a == 0, 32767, result)


def _newton_reciprocal(a: np.ndarray) -> np.ndarray:
    """The Q2.13 ``x ~ 1 / (1 + a)`` of gemmlowp's ``one_over_one_plus_x_for_x_in_0_1`` and
    ``one_minus_x_over_one_plus_x_for_x_in_0_1`` (Newton-Raphson, three steps)."""
    total = a + 32767
    half = _w16(_div(total + np.where(total >= 0, 1, -1), 2))  # RoundingHalfSum(a, One)
    x = _w16(_const16(1515870810) + _srdhm16(half, _const16(-1010580540)))
    for _ in range(3):
        rest = _w16((1 << 13) - _srdhm16(half, x))
        x = _w16(x + _shl16(_srdhm16(x, rest), 2))
    return x


def _logistic16(a: np.ndarray, ibits: int) -> np.ndarray:
    positive = a > 0
    absolute = np.where(positive, a, _w16(-a))
    on_positive = _shl16(_newton_reciprocal(_exp_negative(_w16(-absolute), ibits)), 1)
    return np.where(a == 0, 1 << 14, np.where(positive, on_positive, _w16(32767 - on_positive)))


def _tanh16(a: np.ndarray, ibits: int) -> np.ndarray:
    negative = a < 0
    n = np.where(negative, a, _w16(-a))
    t = _shl16(_w16(_newton_reciprocal(_exp_negative(n, ibits + 1)) - (1 << 13)), 2)
    return np.where(a == 0, 0, np.where(negative, _w16(-t), t))


@cache
def gemmlowp_table(fn: str, ibits: int) -> np.ndarray:
    """gemmlowp's ``logistic``/``tanh`` from Q(ibits) int16 to Q0.15, for every int16 input
    (indexed by ``input + 32768``)."""
    codes = np.arange(-32768, 32768, dtype=_I64)
    out = _logistic16(codes, ibits) if fn == "sigmoid" else _tanh16(codes, ibits)
    return out.astype(_I64)


def _lookup(table: np.ndarray, x: np.ndarray) -> np.ndarray:
    return table[x + 32768]


# -- the LSTM ---------------------------------------------------------------------------------

def _scale(info) -> float:
    return float(info.quant.scale[0])


def _zero_point(info) -> int:
    return int(info.quant.zero_point[0])


def _mul(real) -> tuple[int, int]:
    return quantize_multiplier(float(real))


def _clamp16(x: np.ndarray) -> np.ndarray:
    return np.clip(x, -32768, 32767)


class _Products:
    """The gates' weight matrices side by side (one product for all gates; exact integers held in
    float64 for BLAS) with each column's effective bias and multiplier: ``rescale(W v + b)``."""

    def __init__(self, mats: list, biases: list, muls: list) -> None:
        n = mats[0].shape[0]
        self.w = np.concatenate([m.T for m in mats], axis=1).astype(np.float64)
        self.b = np.concatenate(biases)
        self.mult = np.repeat(np.array([m for m, _ in muls], _I64), n)
        self.shift = np.repeat(np.array([s for _, s in muls], _I64), n)

    def __call__(self, v: np.ndarray) -> np.ndarray:
        return _mbqm((v.astype(np.float64) @ self.w).astype(_I64) + self.b, self.mult, self.shift)


def _layer_norm(x: np.ndarray, w: np.ndarray, bias: np.ndarray, m: tuple[int, int], guard: int) -> np.ndarray:
    """LiteRT's integer ``ApplyLayerNorm`` of each row of int16 ``x`` (in int64)."""
    n = x.shape[1]
    mean = _div(x.sum(axis=1) * 1024, n)
    variance = _div((x * x).sum(axis=1) * ((1 << 20) // n) - mean * mean, 1 << 20)
    inv_a, inv_b = inv_sqrt_multiplier(np.where(variance < 1, guard, variance))
    rescaled = _mbqm(1024 * x - mean[:, None], inv_a[:, None], inv_b[:, None])
    val3 = ((rescaled * w + bias + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)  # in int32, as C computes it
    return _clamp16(_mbqm(_div(np.where(val3 > 0, val3 + 512, val3 - 512), 1024), m[0], m[1] + 12))


class IntegerLstm:
    """One UNIDIRECTIONAL_SEQUENCE_LSTM or LSTM with int8 input and output state and int16 cell state.

    ``slots``: as :class:`~gpulite.backends.cpu.kernels.recurrent.Direction` takes them (``x``,
    ``h``, ``peephole``, ``bias``, ``norm``, ``proj_w``, ``proj_b``), plus ``h_state`` and
    ``c_state``, the state inputs.
    """

    def __init__(self, node, ctx, slots: dict) -> None:
        self.node = node
        graph = ctx.graph
        if len(node.intermediates) != 5:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"an int8 LSTM needs 5 intermediate tensors (LiteRT's "
                                     f"8x8_16 kernel), got {len(node.intermediates)}")
        inter = [graph.tensors[i] for i in node.intermediates]
        x_info = ctx.in_info(0)
        h_info, c_info = ctx.in_info(slots["h_state"]), ctx.in_info(slots["c_state"])
        self._require(x_info, "input", np.int8)
        self._require(h_info, "output state", np.int8)
        self._require(c_info, "cell state", np.int16)
        self._require(inter[4], "intermediate 4 (hidden)", None)
        self._require(ctx.out_info(0), "output", np.int8)
        cell_log2 = math.log2(_scale(c_info))
        if abs(cell_log2 - round(cell_log2)) > 1e-3:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"the cell state's scale {_scale(c_info)} must be a "
                                     "power of two")
        self.cell_scale = round(cell_log2)
        if not -15 <= self.cell_scale <= -9:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"the cell state's scale 2^{self.cell_scale} is out "
                                     "of LiteRT's range 2^-15 .. 2^-9 (its tanh of the cell takes 0 to 6 integer bits)")
        cifg = not ctx.has_input(slots["x"][0])
        self.cifg = cifg
        norm: tuple[int, ...] = slots.get("norm") or ()
        layer_norm = bool(norm) and ctx.has_input(norm[1])
        gate_scales = []
        for k in range(4):
            if layer_norm:
                self._require(inter[k], f"intermediate {k}", None)
                gate_scales.append(_F32(_scale(inter[k])))
            else:
                gate_scales.append(_F32(2.0 ** -12))
        hidden_scale, self.hidden_zp = _F32(_scale(inter[4])), _zero_point(inter[4])
        x_scale, x_zp = _F32(_scale(x_info)), _zero_point(x_info)
        h_scale, self.h_zp = _F32(_scale(h_info)), _zero_point(h_info)
        self.order = (1, 2, 3) if cifg else (0, 1, 2, 3)  # the gates, side by side in this order
        xs: tuple[list, list, list] = ([], [], [])  # (weights, biases, multipliers) of the input products
        hs: tuple[list, list, list] = ([], [], [])  # and of the recurrent ones
        self.peep: dict[int, tuple] = {}
        self.ln: dict[int, tuple] = {}
        for g in self.order:
            wx, wx_s = self._weights(ctx, slots["x"][g], "input weights")
            wh, wh_s = self._weights(ctx, slots["h"][g], "recurrent weights")
            bias = self._const(ctx, slots["bias"][g], "gate bias", np.int32)
            ps = slots["peephole"][_PEEPHOLE[g]] if g in _PEEPHOLE else -1
            if ps >= 0 and ctx.has_input(ps):
                pw = self._const(ctx, ps, "peephole weights", np.int16)
                real = 2.0 ** self.cell_scale * float(_F32(_scale(ctx.in_info(ps)))) / float(gate_scales[g])
                self.peep[g] = (pw.astype(_I64), _mul(_F32(real)))
            if layer_norm:
                lw = self._const(ctx, norm[g], "layer norm coefficients", np.int16)
                ln_scale = _F32(_scale(ctx.in_info(norm[g])))
                self.ln[g] = (lw.astype(_I64), bias.astype(_I64), _mul(ln_scale), max(1, int(_F32(10000) * ln_scale)))
            x_bias = (0 if layer_norm else bias.astype(_I64)) - x_zp * wx.sum(axis=1, dtype=_I64)
            for parts, w, b, m in ((xs, wx, x_bias, _mul(wx_s * x_scale / gate_scales[g])),
                                   (hs, wh, -self.h_zp * wh.sum(axis=1, dtype=_I64),
                                    _mul(wh_s * h_scale / gate_scales[g]))):
                parts[0].append(w)
                parts[1].append(b)
                parts[2].append(m)
        self.input_products, self.recurrent_products = _Products(*xs), _Products(*hs)
        self.n_cell = c_info.shape[-1]
        self.hidden_mul = _mul(_F32(2.0 ** -15 / float(hidden_scale) * 2.0 ** -15))
        self.proj = None
        if ctx.has_input(slots["proj_w"]):
            if any(ctx.has_input(p) for p in slots["peephole"]) and h_info.shape[-1] != c_info.shape[-1]:
                raise UnsupportedOpError(node.op, node.index, "cpu", "peephole weights with a projection to "
                                         f"{h_info.shape[-1]} outputs from {c_info.shape[-1]} cells are not supported "
                                         "(LiteRT's integer kernel applies the peephole to the first n_output cells)")
            pw, pw_s = self._weights(ctx, slots["proj_w"], "projection weights")
            pb = (self._const(ctx, slots["proj_b"], "projection bias", np.int32).astype(_I64)
                  if ctx.has_input(slots["proj_b"]) else 0)
            self.proj = (pw.T.astype(np.float64), pb + self.hidden_zp * pw.sum(axis=1, dtype=_I64),
                         _mul(pw_s * hidden_scale / h_scale))
        opts = node.options
        out_scale = _F32(_scale(ctx.out_info(0)))
        cell_clip, proj_clip = _F32(opts.cell_clip), _F32(opts.proj_clip)
        # float32 quotients, clamped, truncated toward zero (C's static_cast)
        self.cell_clip = int(np.clip(cell_clip / _F32(_scale(c_info)), -32768, 32767)) if cell_clip > 0 else 0
        self.proj_clip = int(np.clip(proj_clip / out_scale, -128, 127)) if proj_clip > 0 else 0
        self.sigmoid = gemmlowp_table("sigmoid", 3)
        self.tanh_gate = gemmlowp_table("tanh", 3)
        self.tanh_cell = gemmlowp_table("tanh", 15 + self.cell_scale)

    def _require(self, info, what: str, dtype) -> None:
        node = self.node
        if dtype is not None and info.dtype != np.dtype(dtype):
            raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} of an int8 LSTM must be "
                                     f"{np.dtype(dtype)}, got {info.dtype}")
        q = info.quant
        if q is None or q.scale.size != 1:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} of an int8 LSTM must be quantized per "
                                     f"tensor, got {'no quantization' if q is None else f'{q.scale.size} scales'}")

    def _const(self, ctx, slot: int, what: str, dtype) -> np.ndarray:
        node = self.node
        v = ctx.const(slot) if ctx.has_input(slot) else None
        if v is None or v.dtype != np.dtype(dtype):
            got = "none" if v is None else str(v.dtype)
            raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {slot}) of an int8 LSTM must be a "
                                     f"{np.dtype(dtype)} constant, got {got}")
        return v

    def _weights(self, ctx, slot: int, what: str) -> tuple[np.ndarray, np.float32]:
        w = self._const(ctx, slot, what, np.int8)
        self._require(ctx.in_info(slot), what, np.int8)
        return w.reshape(w.shape[0], -1).astype(_I64), _F32(_scale(ctx.in_info(slot)))

    def _finish(self, g: int, gate: np.ndarray, c: np.ndarray, table: np.ndarray) -> np.ndarray:
        """Gate ``g`` from its linear part: plus the peephole term, layer norm, the activation."""
        if g in self.peep:
            w, m = self.peep[g]
            gate = _clamp16(gate + _mbqm(w * c, *m))
        if g in self.ln:
            gate = _layer_norm(gate, *self.ln[g])
        return _lookup(table, gate)

    def step(self, pre: np.ndarray, h: np.ndarray, c: np.ndarray) -> np.ndarray:
        """One time step for all batch rows from the gates' input parts ``pre``; updates the int8
        ``h`` and int16 ``c`` in place and returns the output rows."""
        cv, n = c.astype(_I64), self.n_cell
        linear = _clamp16(self.recurrent_products(h) + pre)
        gate = {g: linear[:, k * n:(k + 1) * n] for k, g in enumerate(self.order)}
        f = self._finish(1, gate[1], cv, self.sigmoid)
        g = self._finish(2, gate[2], cv, self.tanh_gate)
        i = 32767 - f if self.cifg else self._finish(0, gate[0], cv, self.sigmoid)
        shift = 30 + self.cell_scale
        cv = _clamp16(_w16(rounding_divide_by_pot(f * cv, 15)) + _w16(rounding_divide_by_pot(i * g, shift)))
        if self.cell_clip > 0:
            cv = np.clip(cv, -self.cell_clip, self.cell_clip)
        o = self._finish(3, gate[3], cv, self.sigmoid)
        raw = _mbqm(o * _lookup(self.tanh_cell, cv), *self.hidden_mul)
        if self.proj is not None:
            hidden = np.clip(raw - self.hidden_zp, -128, 127)
            w, b, m = self.proj
            out = np.clip(_mbqm((hidden.astype(np.float64) @ w).astype(_I64) + b, *m) + self.h_zp, -128, 127)
            if self.proj_clip > 0:
                out = np.clip(out, -self.proj_clip, self.proj_clip)
        else:
            out = np.clip(raw + self.hidden_zp, -128, 127)
        c[...] = cv
        h[...] = out
        return out

    def run(self, x: np.ndarray, out: np.ndarray, h: np.ndarray, c: np.ndarray) -> None:
        """The whole time-major sequence ``x`` ``[time, batch, input]`` into ``out``: the input parts
        of every step in one product first (``clamp16(rescale(W_x x + b_x))``), then the steps."""
        steps, rows = x.shape[:2]
        pre = _clamp16(self.input_products(x.reshape(steps * rows, -1))).reshape(steps, rows, -1)
        for t in range(steps):
            out[t] = self.step(pre[t], h, c)


def integer_state(node, ctx, slot: int, rows: int, width: int, what: str, dtype) -> np.ndarray:
    """An int8 LSTM's state tensor (a variable, updated in place) as ``[rows, width]``."""
    if not ctx.has_input(slot) or not ctx.in_info(slot).is_variable:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {slot}) must be a variable tensor "
                                 "(the kernel updates it in place), as LiteRT requires")
    s = ctx.input(slot)
    if s.dtype != np.dtype(dtype) or s.size != rows * width:
        raise ShapeError(f"node {node.index} ({node.op}): {what} (input {slot}) is {s.dtype} {list(s.shape)}; "
                         f"expected {np.dtype(dtype)} with {rows}x{width} values")
    return s.reshape(rows, width)
