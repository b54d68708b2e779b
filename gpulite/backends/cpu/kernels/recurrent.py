"""The recurrent ops, float and hybrid (int8 weights, float activations), as LiteRT's
``lstm_eval.cc`` and ``kernel_utils.cc`` (``RnnBatchStep``) step them.

Each time step computes the four gates (input, forget, cell, output; no input gate with CIFG,
where it is ``1 - forget``) as bias + ``W_x x`` (+ ``W_aux aux``) + ``W_h h``, adds the
peephole terms (the old cell state for input and forget, the new one for output), applies
layer norm when the coefficients are given (the gate normalized over its cells, times the
coefficients, plus the bias, which then is not added first), then sigmoid (the cell gate:
the op's activation). ``c = clip(f * c + i * g)``, ``h = o * act(c)``, projected
(``clip(P h + b)``) when there are projection weights. ``h`` and ``c`` are the op's state
tensors (variables in converter-written models), updated in place, so a second invoke starts
where the first ended, as in LiteRT.

Hybrid: each input, aux input and state row is quantized on its own before every product
(:func:`~gpulite.backends.cpu.quant.quantize_rows`, asymmetric when the op's
``asymmetric_quantize_inputs`` says so) and multiplied with the int8 weights exactly
(:func:`~gpulite.backends.cpu.quant.hybrid_matmul`); peephole weights are dequantized.
A full-integer UNIDIRECTIONAL_SEQUENCE_LSTM or LSTM (int8 input, int16 cell state; the former is
what the converter writes for a full-int8 Keras LSTM) runs
:mod:`~gpulite.backends.cpu.kernels.recurrent_int8`; the other recurrent ops refuse int8 activations.

The gates' weights are side by side in one matrix (one product per step for all gates), and
the input products of a whole sequence are one product before the steps (per-row quantization
makes that exactly what stepping gives); each step adds the recurrent product.

UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and LSTM (one step, the full kernel)
share :class:`Direction`; UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and RNN (one step)
share :class:`RnnCell`: ``h = act(b + W_x x (+ W_aux aux) + W_h h)`` per step, the output being
``h``; hybrid as above. Bidirectional ops run the forward pass, then the backward one (from the
last step to the first), each with its own states.

Where LiteRT's kernels are wrong gpulite computes what their own comments describe, so results
differ there: the bidirectional LSTM's batch-major merged output offsets each sequence's output
state by the merged width (reading past the state from the second sequence on); the
bidirectional RNN's hybrid time-major path runs the whole sequence ``max_time`` times over, and
its batch-major backward pass reads the input even when the aux input is the backward input.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.recurrent_int8 import IntegerLstm, integer_state
from gpulite.backends.cpu.quant import hybrid_matmul, quantize_rows
from gpulite.backends.kernels import register_kernel
from gpulite.errors import ShapeError, UnsupportedOpError
from gpulite.model.opdefs import FusedActivation, Op

_F32 = np.dtype(np.float32)
_CLAMPS = {FusedActivation.NONE: None, FusedActivation.RELU: (0.0, np.inf),
           FusedActivation.RELU_N1_TO_1: (-1.0, 1.0), FusedActivation.RELU6: (0.0, 6.0)}


_PEEPHOLE = {0: 0, 1: 1, 3: 2}  # gate -> its peephole weights (the cell gate has none)


def _sigmoid(x: np.ndarray) -> np.ndarray:
    # exp(-x) overflows to inf for x < -88, where the sigmoid is then 0: the callers run under
    # np.errstate(over="ignore") (once per sequence, not per call: entering it costs ~30 us)
    return np.float32(1) / (np.float32(1) + np.exp(-x))


def _activation(node) -> object:
    act = node.activation
    if act == FusedActivation.TANH:
        return np.tanh
    if act not in _CLAMPS:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"cell activation {act} is not supported "
                                 "(NONE, RELU, RELU_N1_TO_1, RELU6 or TANH)")
    bounds = _CLAMPS[act]
    if bounds is None:
        return lambda x: x
    return lambda x: np.clip(x, np.float32(bounds[0]), np.float32(bounds[1]))


def _layer_norm(x: np.ndarray) -> np.ndarray:
    """TFLite's ``MeanStddevNormalization`` of each row."""
    mean = x.mean(axis=1, keepdims=True, dtype=np.float32)
    var = np.square(x - mean).mean(axis=1, keepdims=True, dtype=np.float32)
    return (x - mean) * (np.float32(1) / np.sqrt(var + np.float32(1e-8)))


class _Weights:
    """The weight matrices ``[units, in]`` at some input positions, side by side as one ``[in, units...]``
    matrix, so one product serves every gate: float32, or (hybrid) int8 values held exactly in float64
    with each column's weight scale and, for asymmetric inputs, each column's weight sum."""

    def __init__(self, ctx, slots: tuple[int, ...], what: str, hybrid: bool, asymmetric: bool) -> None:
        node = ctx.node
        mats, scales = [], []
        for s in slots:
            w = ctx.const(s) if ctx.has_input(s) else None
            if w is None:
                raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {s}) must be a constant")
            q = ctx.in_info(s).quant
            if hybrid and (w.dtype != np.int8 or q is None or q.scale.size != 1):
                raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {s}) of a hybrid op must be "
                                         f"int8 quantized per tensor, got {w.dtype} with "
                                         f"{'no' if q is None else q.scale.size} scale(s)")
            if not hybrid and w.dtype != _F32:
                raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {s}) is {w.dtype}; a float op "
                                         "needs float32 weights")
            mats.append(w.reshape(w.shape[0], -1))
            if hybrid:
                scales.append(np.full(w.shape[0], q.scale[0], _F32))
        cat = np.concatenate(mats)
        self.hybrid, self.asymmetric = hybrid, asymmetric
        if hybrid:
            # Integer sums up to 2**24 are exact in float32 (BLAS's fastest), else in float64.
            exact = np.float32 if cat.shape[1] * 128 * 127 < 2**24 else np.float64
            self.w = np.ascontiguousarray(cat.T, exact)
            self.scale = np.concatenate(scales)
            self.row_sums = cat.astype(exact).sum(axis=1) if asymmetric else None
        else:
            self.w = np.ascontiguousarray(cat.T)

    def times(self, x: np.ndarray) -> np.ndarray:
        """``x @ W`` for rows ``x``, each row quantized on its own first when hybrid."""
        if not self.hybrid:
            return x @ self.w
        q, sf, zp = quantize_rows(x, self.asymmetric)
        return hybrid_matmul(q, sf, zp, self.w, self.scale, self.row_sums)


def _optional(ctx, slots: tuple[int, ...], what: str, hybrid: bool, asymmetric: bool) -> _Weights | None:
    present = tuple(s for s in slots if ctx.has_input(s))
    return _Weights(ctx, present, what, hybrid, asymmetric) if present else None


def _vector(ctx, slot: int) -> np.ndarray | None:
    """A 1-D weight (peephole) as float32, dequantized when int8 (LiteRT's ``VectorScalarMultiply``)."""
    w = ctx.const(slot) if ctx.has_input(slot) else None
    if w is None or w.dtype == _F32:
        return w
    return w.astype(_F32) * np.float32(ctx.in_info(slot).quant.scale[0])


def _consts(ctx, slots: tuple[int, ...]) -> list[np.ndarray | None]:
    """The constant values at input positions ``slots`` (None where omitted); four Nones for no slots."""
    return [ctx.const(s) if ctx.has_input(s) else None for s in slots] if slots else [None] * 4


def _sequence(step, pre: np.ndarray, out: np.ndarray, forward: bool) -> None:
    """``out[t] = step(pre[t])`` over the time-major sequence, forwards or backwards."""
    with np.errstate(over="ignore"):
        for t in range(pre.shape[0]) if forward else range(pre.shape[0] - 1, -1, -1):
            out[t] = step(pre[t])


class Direction:
    """The weights of one LSTM direction and its step (LiteRT's ``LstmStepFloat``/``LstmStepHybrid``).

    ``slots`` names the node's input positions: ``x``, ``aux``, ``h`` (4 each: input, forget,
    cell, output gates), ``peephole`` (3: input, forget, output), ``bias`` (4), ``norm`` (4
    or None), ``proj_w``, ``proj_b``. The gates' input products of a whole sequence are one
    product (:meth:`project`); each step adds the recurrent one (:meth:`step`).
    """

    def __init__(self, node, ctx, slots: dict, hybrid: bool, asymmetric: bool, diagonal: bool = False) -> None:
        self.cifg = not ctx.has_input(slots["x"][0])
        self.gates = (1, 2, 3) if self.cifg else (0, 1, 2, 3)
        pick = tuple(k for k in range(4) if k in self.gates)
        self.wx = _Weights(ctx, tuple(slots["x"][k] for k in pick), "input weights", hybrid, asymmetric)
        self.waux = _optional(ctx, tuple(slots["aux"][k] for k in pick), "aux input weights", hybrid, asymmetric) \
            if slots.get("aux") else None
        h_slots = tuple(slots["h"][k] for k in pick)
        self.diagonal = diagonal
        if diagonal:  # [n_cell] vectors: an elementwise recurrence
            self.wh_diag = np.concatenate([_vector(ctx, s) for s in h_slots])
        else:
            self.wh = _Weights(ctx, h_slots, "recurrent weights", hybrid, asymmetric)
        self.peep = [_vector(ctx, s) for s in slots["peephole"]]
        self.norm = _consts(ctx, slots.get("norm") or ())
        self.layer_norm = self.norm[1] is not None
        self.bias = _consts(ctx, slots["bias"])
        for g in self.gates:
            if self.bias[g] is None:
                raise UnsupportedOpError(node.op, node.index, "cpu", f"gate {g}'s bias (input {slots['bias'][g]}) "
                                         "must be a constant")
        self.n_cell = self.bias[1].size
        self.bias_cat = np.concatenate([self.bias[g] for g in self.gates])
        self.proj = _optional(ctx, (slots["proj_w"],), "projection weights", hybrid, asymmetric)
        pb = slots["proj_b"]
        self.proj_b = ctx.const(pb) if ctx.has_input(pb) else None
        opts = node.options
        self.cell_clip, self.proj_clip = float(opts.cell_clip), float(opts.proj_clip)
        self.act = _activation(node)
        self.no_activation = node.activation == FusedActivation.NONE

    def project(self, x: np.ndarray, aux: np.ndarray | None) -> np.ndarray:
        """Bias (none with layer norm) + ``W_x x`` (+ ``W_aux aux``) for rows ``x``: ``[rows, gates * n_cell]``."""
        pre = self.wx.times(x)
        if not self.layer_norm:
            pre += self.bias_cat
        if aux is not None and self.waux is not None:
            pre += self.waux.times(aux)
        return pre

    def _finish(self, g: int, pre: np.ndarray, c: np.ndarray) -> np.ndarray:
        peep = self.peep[_PEEPHOLE[g]] if g in _PEEPHOLE else None
        if peep is not None:
            pre += peep * c
        if self.layer_norm:
            pre = _layer_norm(pre) * self.norm[g] + self.bias[g]
        return pre

    def step(self, pre: np.ndarray, h: np.ndarray, c: np.ndarray) -> np.ndarray:
        """One time step for every batch row from its :meth:`project` rows: updates ``h`` and ``c``
        in place, returns the output rows."""
        if self.diagonal:
            gates = pre + np.tile(h, len(self.gates)) * self.wh_diag
        else:
            gates = pre + self.wh.times(h)
        n = self.n_cell
        gate = {g: gates[:, k * n:(k + 1) * n] for k, g in enumerate(self.gates)}
        f = _sigmoid(self._finish(1, gate[1], c))
        i = np.float32(1) - f if self.cifg else _sigmoid(self._finish(0, gate[0], c))
        g = self.act(self._finish(2, gate[2], c))
        c *= f
        c += g * i
        if self.cell_clip > 0:
            np.clip(c, -np.float32(self.cell_clip), np.float32(self.cell_clip), out=c)
        o = _sigmoid(self._finish(3, gate[3], c))
        # LiteRT's ApplyActivationToVector writes nothing for NONE, so act(c) is then read from the
        # scratch that still holds the cell gate g: h = o * g, not o * c (measured, float and hybrid).
        out = o * (g if self.no_activation else self.act(c))
        if self.proj is not None:
            projected = self.proj.times(out)
            out = projected if self.proj_b is None else self.proj_b + projected
            if self.proj_clip > 0:
                np.clip(out, -np.float32(self.proj_clip), np.float32(self.proj_clip), out=out)
        h[...] = out
        return out

    def run(self, x: np.ndarray, aux: np.ndarray | None, out: np.ndarray, h: np.ndarray, c: np.ndarray,
            forward: bool = True) -> None:
        """The whole sequence: ``x``/``aux``/``out`` time-major views ``[time, batch, ...]``."""
        pre = _project_sequence(self.project, x, aux)
        _sequence(lambda p: self.step(p, h, c), pre, out, forward)


def _project_sequence(project, x: np.ndarray, aux: np.ndarray | None) -> np.ndarray:
    """``project`` applied to every (time, batch) row of time-major ``x`` (and ``aux``) at once."""
    steps, rows = x.shape[:2]
    flat = x.reshape(steps * rows, -1)
    return project(flat, None if aux is None else aux.reshape(steps * rows, -1)).reshape(steps, rows, -1)


class RnnCell:
    """One direction of a basic RNN, LiteRT's ``RnnBatchStep``: ``h = act(b + W_x x + W_aux aux + W_h h)``.

    ``slots``: the node's input positions of the input weights, recurrent weights, bias and aux
    weights (None: no aux input)."""

    def __init__(self, node, ctx, slots: tuple[int, int, int, int | None], hybrid: bool, asymmetric: bool) -> None:
        wx, wh, b, aux = slots
        self.wx = _Weights(ctx, (wx,), "input weights", hybrid, asymmetric)
        self.wh = _Weights(ctx, (wh,), "recurrent weights", hybrid, asymmetric)
        self.waux = _Weights(ctx, (aux,), "aux input weights", hybrid, asymmetric) if aux is not None else None
        self.bias = ctx.const(b) if ctx.has_input(b) else None
        if self.bias is None:
            raise UnsupportedOpError(node.op, node.index, "cpu", f"the bias (input {b}) must be a constant")
        self.act = _activation(node)

    def project(self, x: np.ndarray, aux: np.ndarray | None) -> np.ndarray:
        pre = self.bias + self.wx.times(x)
        if aux is not None and self.waux is not None:
            pre += self.waux.times(aux)
        return pre

    def step(self, pre: np.ndarray, h: np.ndarray) -> np.ndarray:
        h[...] = self.act(pre + self.wh.times(h))
        return h

    def run(self, x: np.ndarray, aux: np.ndarray | None, out: np.ndarray, h: np.ndarray,
            forward: bool = True) -> None:
        pre = _project_sequence(self.project, x, aux)
        _sequence(lambda p: self.step(p, h), pre, out, forward)


def _mode(node, ctx, x_info, weight_slot: int) -> tuple[bool, bool]:
    """(hybrid, asymmetric) from the input's and the weights' dtypes; other inputs are refused."""
    if x_info.dtype != _F32:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"input is {x_info.dtype}; only float32 inputs (with "
                                 "float32 or int8 weights) are supported, and int8 ones by "
                                 "UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM")
    hybrid = ctx.in_info(weight_slot).dtype == np.int8
    return hybrid, hybrid and bool(getattr(node.options, "asymmetric_quantize_inputs", False))


def _time_major(a: np.ndarray, time_major: bool) -> np.ndarray:
    if a.ndim != 3:
        raise ShapeError(f"LSTM sequences are 3-D, got shape {list(a.shape)}")
    return a if time_major else a.transpose(1, 0, 2)


def _state(node, ctx, slot: int, rows: int, width: int, what: str) -> np.ndarray:
    """The state the kernel updates in place: a variable tensor, as LiteRT requires (``GetVariableInput``)."""
    if not ctx.has_input(slot) or not ctx.in_info(slot).is_variable:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{what} (input {slot}) must be a variable tensor "
                                 "(the kernel updates it in place), as LiteRT requires")
    s = ctx.input(slot)
    if s.dtype != _F32 or s.size != rows * width:
        raise ShapeError(f"node {node.index} ({node.op}): {what} (input {slot}) is {s.dtype} {list(s.shape)}; "
                         f"expected float32 with {rows}x{width} values")
    return s.reshape(rows, width)


def _slots(base: int, peep: int, bias: int, proj: int) -> dict:
    return {"x": tuple(range(base, base + 4)), "h": tuple(range(base + 4, base + 8)),
            "peephole": tuple(range(peep, peep + 3)), "bias": tuple(range(bias, bias + 4)),
            "proj_w": proj, "proj_b": proj + 1}


@register_kernel(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, "cpu", int8=True)
def unidirectional_sequence_lstm(node, ctx):
    if ctx.num_inputs not in (20, 24):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected 20 or 24 inputs, got {ctx.num_inputs}")
    slots = {**_slots(1, 9, 12, 16), "norm": tuple(range(20, 24)) if ctx.num_inputs == 24 else None}
    if ctx.in_info(0).dtype == np.int8:
        return _integer_sequence_lstm(node, ctx, slots)
    hybrid, asym = _mode(node, ctx, ctx.in_info(0), 4)
    cell = Direction(node, ctx, slots, hybrid, asym, bool(getattr(node.options, "diagonal_recurrent_tensors", False)))
    if cell.diagonal and hybrid:
        raise UnsupportedOpError(node.op, node.index, "cpu", "diagonal recurrent weights are supported on float "
                                 "LSTMs only")
    tm = bool(node.options.time_major)
    x, out = _time_major(ctx.input(0), tm), _time_major(ctx.output(0), tm)
    rows = x.shape[1]
    h = _state(node, ctx, 18, rows, out.shape[2], "output state")
    c = _state(node, ctx, 19, rows, cell.bias[1].size, "cell state")

    def run():
        cell.run(x, None, out, h, c)
    return run


def _integer_sequence_lstm(node, ctx, slots: dict):
    """The full-integer UNIDIRECTIONAL_SEQUENCE_LSTM (:mod:`~gpulite.backends.cpu.kernels.recurrent_int8`)."""
    if getattr(node.options, "diagonal_recurrent_tensors", False):
        raise UnsupportedOpError(node.op, node.index, "cpu", "diagonal recurrent weights are supported on float "
                                 "LSTMs only")
    tm = bool(node.options.time_major)
    return _integer_lstm(node, ctx, slots, _time_major(ctx.input(0), tm), _time_major(ctx.output(0), tm))


def _integer_lstm(node, ctx, slots: dict, x: np.ndarray, out: np.ndarray):
    """The full-integer LSTM over the time-major views ``x`` and ``out`` (one step for the LSTM op)."""
    cell = IntegerLstm(node, ctx, {**slots, "h_state": 18, "c_state": 19})
    rows = x.shape[1]
    h = integer_state(node, ctx, 18, rows, out.shape[2], "output state", np.int8)
    c = integer_state(node, ctx, 19, rows, ctx.in_info(slots["bias"][1]).shape[0], "cell state", np.int16)

    def run():
        cell.run(x, out, h, c)
    return run


def _bidirectional_options(node) -> tuple[bool, bool]:
    """``(merge_outputs, time_major)`` of a bidirectional op, its output count checked against them."""
    merge, tm = bool(node.options.merge_outputs), bool(node.options.time_major)
    if len(node.outputs) != (1 if merge else 2):
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{len(node.outputs)} outputs with merge_outputs="
                                 f"{merge}; expected {1 if merge else 2}")
    return merge, tm


def _bidirectional_outputs(ctx, time_major: bool, merge: bool, n_fw: int) -> tuple[np.ndarray, np.ndarray]:
    """Time-major views the forward and backward passes write: the two halves of the one merged
    output (forward first), or the two outputs."""
    out = _time_major(ctx.output(0), time_major)
    if merge:
        return out[..., :n_fw], out[..., n_fw:]
    return out, _time_major(ctx.output(1), time_major)


@register_kernel(Op.BIDIRECTIONAL_SEQUENCE_LSTM, "cpu")
def bidirectional_sequence_lstm(node, ctx):
    if ctx.num_inputs != 48:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected 48 inputs, got {ctx.num_inputs}")
    merge, tm = _bidirectional_options(node)
    hybrid, asym = _mode(node, ctx, ctx.in_info(0), 4)
    has_aux, aux_weights = ctx.has_input(39), ctx.has_input(41)
    fw_slots = {**_slots(1, 9, 12, 16), "aux": tuple(range(40, 44)) if aux_weights else None}
    bw_slots = {**_slots(18, 26, 29, 33), "aux": tuple(range(44, 48)) if aux_weights else None}
    fw = Direction(node, ctx, fw_slots, hybrid, asym)
    bw = Direction(node, ctx, bw_slots, hybrid, asym)
    x = _time_major(ctx.input(0), tm)
    aux = _time_major(ctx.input(39), tm) if has_aux else None
    # LiteRT: aux input without aux weights is the backward direction's own input (stacked
    # bidirectional LSTMs without cross links); with aux weights, both directions read it.
    bw_x, real_aux = (aux, None) if has_aux and not aux_weights else (x, aux)
    n_fw = ctx.in_info(35).shape[-1]
    fw_view, bw_view = _bidirectional_outputs(ctx, tm, merge, n_fw)
    rows = x.shape[1]
    fw_h = _state(node, ctx, 35, rows, n_fw, "forward output state")
    fw_c = _state(node, ctx, 36, rows, fw.bias[1].size, "forward cell state")
    bw_h = _state(node, ctx, 37, rows, bw_view.shape[2], "backward output state")
    bw_c = _state(node, ctx, 38, rows, bw.bias[1].size, "backward cell state")

    def run():
        fw.run(x, real_aux, fw_view, fw_h, fw_c)
        bw.run(bw_x, real_aux, bw_view, bw_h, bw_c, forward=False)
    return run


@register_kernel(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "cpu")
def unidirectional_sequence_rnn(node, ctx):
    if ctx.num_inputs != 5:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected 5 inputs, got {ctx.num_inputs}")
    cell = RnnCell(node, ctx, (1, 2, 3, None), *_mode(node, ctx, ctx.in_info(0), 1))
    tm = bool(node.options.time_major)
    x, out = _time_major(ctx.input(0), tm), _time_major(ctx.output(0), tm)
    h = _state(node, ctx, 4, x.shape[1], cell.bias.size, "hidden state")

    def run():
        cell.run(x, None, out, h)
    return run


@register_kernel(Op.BIDIRECTIONAL_SEQUENCE_RNN, "cpu")
def bidirectional_sequence_rnn(node, ctx):
    if ctx.num_inputs != 12:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected 12 inputs, got {ctx.num_inputs}")
    merge, tm = _bidirectional_options(node)
    hybrid, asym = _mode(node, ctx, ctx.in_info(0), 1)
    has_aux, aux_weights = ctx.has_input(9), ctx.has_input(10)
    fw = RnnCell(node, ctx, (1, 2, 3, 10 if aux_weights else None), hybrid, asym)
    bw = RnnCell(node, ctx, (5, 6, 7, 11 if aux_weights else None), hybrid, asym)
    x = _time_major(ctx.input(0), tm)
    aux = _time_major(ctx.input(9), tm) if has_aux else None
    bw_x, real_aux = (aux, None) if has_aux and not aux_weights else (x, aux)  # as the LSTM's
    fw_view, bw_view = _bidirectional_outputs(ctx, tm, merge, fw.bias.size)
    rows = x.shape[1]
    fw_h = _state(node, ctx, 4, rows, fw.bias.size, "forward hidden state")
    bw_h = _state(node, ctx, 8, rows, bw.bias.size, "backward hidden state")

    def run():
        fw.run(x, real_aux, fw_view, fw_h)
        bw.run(bw_x, real_aux, bw_view, bw_h, forward=False)
    return run


@register_kernel(Op.LSTM, "cpu", int8=True)
def lstm(node, ctx):
    """One LSTM step (the full kernel): ``[batch, input]`` in, ``[batch, output]`` out."""
    if getattr(node.options, "kernel_type", 0) != 0:
        raise UnsupportedOpError(node.op, node.index, "cpu", "the basic LSTM kernel (kernel_type BASIC) is not "
                                 "supported, only the full one")
    if ctx.num_inputs not in (20, 24) or len(node.outputs) != 1:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"{ctx.num_inputs} inputs and {len(node.outputs)} "
                                 "outputs; the full LSTM kernel takes 20 or 24 inputs and gives 1 output")
    slots = {**_slots(1, 9, 12, 16), "norm": tuple(range(20, 24)) if ctx.num_inputs == 24 else None}
    x, out = ctx.input(0), ctx.output(0)
    if x.ndim != 2 or out.ndim != 2:
        raise ShapeError(f"node {node.index} (LSTM): input and output must be 2-D [batch, features], got "
                         f"{list(x.shape)} and {list(out.shape)}")
    if ctx.in_info(0).dtype == np.int8:  # the full-integer kernel, one time step
        return _integer_lstm(node, ctx, slots, x[None], out[None])
    hybrid, asym = _mode(node, ctx, ctx.in_info(0), 4)
    cell = Direction(node, ctx, slots, hybrid, asym)
    h = _state(node, ctx, 18, x.shape[0], out.shape[1], "output state")
    c = _state(node, ctx, 19, x.shape[0], cell.bias[1].size, "cell state")

    def run():
        with np.errstate(over="ignore"):
            out[...] = cell.step(cell.project(x, None), h, c)
    return run


@register_kernel(Op.RNN, "cpu")
def rnn(node, ctx):
    """One basic RNN step: ``[batch, input]`` in, ``[batch, units]`` out."""
    if ctx.num_inputs != 5:
        raise UnsupportedOpError(node.op, node.index, "cpu", f"expected 5 inputs, got {ctx.num_inputs}")
    cell = RnnCell(node, ctx, (1, 2, 3, None), *_mode(node, ctx, ctx.in_info(0), 1))
    x, out = ctx.input(0), ctx.output(0)
    if x.ndim != 2:
        raise ShapeError(f"node {node.index} (RNN): input must be 2-D [batch, features], got {list(x.shape)}")
    h = _state(node, ctx, 4, x.shape[0], cell.bias.size, "hidden state")

    def run():
        out[...] = cell.step(cell.project(x, None), h)
    return run
