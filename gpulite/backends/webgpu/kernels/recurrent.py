"""The recurrent ops, float32: UNIDIRECTIONAL_SEQUENCE_LSTM, BIDIRECTIONAL_SEQUENCE_LSTM and LSTM (one
step), UNIDIRECTIONAL_SEQUENCE_RNN, BIDIRECTIONAL_SEQUENCE_RNN and RNN (one step). The cpu kernels in
``backends/cpu/kernels/recurrent.py`` are the reference semantics, LiteRT's ``lstm_eval.cc`` and
``kernel_utils.cc`` the oracle; an RNN step is ``rnn_step.wgsl`` (``h = act(b + W_x x (+ W_aux aux)
+ W_h h)``), the rest of this docstring describes the LSTMs.

The recurrence is sequential, so each direction is one dispatch per time step (``lstm_step.wgsl``:
one thread per batch row and cell computes its four gates, updates its cell state in place and
writes its output value at that step), then one dispatch copying the last step's output into
the output state (``recurrent_state.wgsl``). A step reads the previous step's output as ``h``
(the output state at the first step), so no dispatch writes what it reads. All of it is encoded
in the invoke's one command encoder; dispatches in one pass see each other's writes in order.

The states are variable tensors living in the GPU arena: zeroed with it at ``allocate_tensors``
(or set to their initial value) and by ``reset_all_variables`` through ``exe.write``, updated only
by these dispatches, so they persist across invokes as in LiteRT.

Supported: the converter's layout (what Keras writes) plus CIFG, peepholes, cell clip, the
auxiliary input (with aux weights, or as the backward direction's input), time-major and
batch-major sequences, merged and separate bidirectional outputs, cell activations TANH, RELU,
RELU6, RELU_N1_TO_1 and NONE (where LiteRT's ``h = o * g``, as the cpu kernel documents).
A projection (with its bias and clip) is a second dispatch per step, reading the step's
``o * act(c)`` from scratch. Layer norm normalizes each gate over every cell of its row, so a
step is three dispatches there (``lstm_norm.wgsl``: the gates' sums into scratch; the cell
update; the output). Declined (the node runs on the cpu): diagonal recurrent weights,
non-float32 weights (hybrid models under ``quantized="exact"``) and non-variable states.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from gpulite.backends.kernels import register_kernel
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program, wgsl_clamp
from gpulite.graph.ir import Node
from gpulite.model.opdefs import FusedActivation, Op

_F32 = np.dtype(np.float32)
_CELL_ACTS = (FusedActivation.NONE, FusedActivation.RELU, FusedActivation.RELU6, FusedActivation.RELU_N1_TO_1,
              FusedActivation.TANH)


@dataclass(frozen=True)
class _Seq:
    """A ``[time, batch, width]`` or ``[batch, time, width]`` tensor as word offsets: element
    ``(t, b, k)`` is at ``off + t * ts + b * bs + k`` (``off`` includes a merged output's column)."""

    off: int
    ts: int
    bs: int

    def at(self, t: int) -> int:
        return self.off + t * self.ts


def _seq(ctx: GpuContext, ref: TensorRef, time_major: bool, col: int = 0) -> _Seq:
    if len(ref.shape) != 3:
        raise ctx.unsupported(f"LSTM sequences are 3-D, got shape {list(ref.shape)}")
    second, width = ref.shape[1:]
    if time_major:
        return _Seq(ref.offset + col, second * width, width)
    return _Seq(ref.offset + col, width, second * width)


def _shape(ref: TensorRef, time_major: bool) -> tuple[int, int, int]:
    """(steps, batch, width)."""
    a, b, w = ref.shape
    return (a, b, w) if time_major else (b, a, w)


def _const(ctx: GpuContext, slot: int, what: str) -> np.ndarray:
    w = ctx.const(slot)
    if w is None:
        raise ctx.unsupported(f"{what} (input {slot}) must be a constant")
    if w.dtype != _F32:
        raise ctx.unsupported(f"{what} (input {slot}) is {w.dtype}; this kernel takes float32 weights "
                              "(hybrid ops under quantized='exact' run LiteRT's arithmetic on the cpu)")
    return w


def _gate_rows(ctx: GpuContext, slots: tuple[int, ...], n_cell: int, what: str) -> np.ndarray | None:
    """Four ``[n_cell, k]`` gate matrices (a CIFG input gate omitted: zeros) as ``[k, 4, n_cell]``;
    None when every slot is omitted."""
    if not any(ctx.has_input(s) for s in slots):
        return None
    mats = []
    for g, s in enumerate(slots):
        if not ctx.has_input(s):
            if g != 0:
                raise ctx.unsupported(f"{what} of gate {g} (input {s}) is missing")
            mats.append(None)
            continue
        w = _const(ctx, s, what)
        if w.ndim != 2 or w.shape[0] != n_cell:
            raise ctx.unsupported(f"{what} (input {s}) has shape {list(w.shape)}; expected [{n_cell}, k]")
        mats.append(w)
    k = next(m for m in mats if m is not None).shape[1]
    return np.stack([np.zeros((k, n_cell), _F32) if m is None else m.T for m in mats], axis=1)


def _gate_vectors(ctx: GpuContext, slots: tuple[int, ...], n_cell: int, what: str) -> np.ndarray:
    """Per-gate ``[n_cell]`` constants as ``[len(slots), n_cell]``, zeros where omitted."""
    out = np.zeros((len(slots), n_cell), _F32)
    for g, s in enumerate(slots):
        if ctx.has_input(s):
            v = _const(ctx, s, what)
            if v.size != n_cell:
                raise ctx.unsupported(f"{what} (input {s}) has {v.size} values; expected {n_cell}")
            out[g] = v.reshape(-1)
    return out


def _projection(ctx: GpuContext, slot: int, n_cell: int, n_out: int,
                batch: int) -> tuple[TensorRef, TensorRef, TensorRef] | None:
    """(scratch for a step's ``o * act(c)``, projection weights, bias) or None without a projection."""
    if not ctx.has_input(slot):
        if ctx.has_input(slot + 1):
            raise ctx.unsupported(f"a projection bias (input {slot + 1}) without projection weights")
        return None
    w = _const(ctx, slot, "projection weights")
    if w.shape != (n_out, n_cell):
        raise ctx.unsupported(f"projection weights (input {slot}) have shape {list(w.shape)}; "
                              f"expected [{n_out}, {n_cell}]")
    b = _gate_vectors(ctx, (slot + 1,), n_out, "projection bias")
    return ctx.scratch((batch, n_cell)), ctx.weight(w), ctx.weight(b)


def _state(ctx: GpuContext, slot: int, rows: int, width: int, what: str) -> TensorRef:
    if not ctx.has_input(slot) or not ctx.in_info(slot).is_variable:
        raise ctx.unsupported(f"{what} (input {slot}) must be a variable tensor (the kernel updates it in place)")
    ref = ctx.input(slot)
    if ref.dtype != _F32 or ref.size != rows * width:
        raise ctx.unsupported(f"{what} (input {slot}) is {ref.dtype} {list(ref.shape)}; expected float32 "
                              f"with {rows}x{width} values")
    return ref


def _cell_act(ctx: GpuContext, act: FusedActivation) -> dict[str, str]:
    if act not in _CELL_ACTS:
        raise ctx.unsupported(f"cell activation {act}")
    expr = "tanh_safe(v)" if act == FusedActivation.TANH else wgsl_clamp("v", act)
    # LiteRT writes no activation for NONE, so h = o * g (the cell gate), not o * c (cpu kernel).
    return {"CELL_ACT": expr, "HIDDEN": "g" if act == FusedActivation.NONE else "cell_act(c)"}


def _direction(node: Node, ctx: GpuContext, base: int, peep: int, bias: int, proj: int,
               aux_slots: tuple[int, ...] | None, x: TensorRef, xs: _Seq, aux: _Seq | None, aux_width: int,
               out: _Seq, h: TensorRef, c: TensorRef, shape: tuple[int, int, int],
               forward: bool, tag: str, norm: tuple[int, ...] | None = None) -> list[Program]:
    """The programs of one direction: a step per time step (three with layer norm, one more with a
    projection), then the output state's copy. ``base``: the input weights' first slot (recurrent
    weights follow); ``shape``: (steps, batch, n_in) of ``x``; ``norm``: the layer norm
    coefficients' slots."""
    steps, batch, n_in = shape
    if not ctx.has_input(bias + 1) or (ctx.has_input(base) and not ctx.has_input(bias)):
        raise ctx.unsupported("a gate's bias is missing")
    b = _gate_vectors(ctx, tuple(range(bias, bias + 4)), ctx.in_info(bias + 1).shape[-1], "bias")
    n_cell = b.shape[1]
    wx = _gate_rows(ctx, tuple(range(base, base + 4)), n_cell, "input weights")
    wh = _gate_rows(ctx, tuple(range(base + 4, base + 8)), n_cell, "recurrent weights")
    if wx is None or wh is None or wx.shape[0] != n_in:
        raise ctx.unsupported(f"input weights do not fit the input width {n_in}")
    n_out = wh.shape[0]
    projection = _projection(ctx, proj, n_cell, n_out, batch)
    waux = _gate_rows(ctx, aux_slots, n_cell, "aux input weights") if aux_slots and aux is not None else None
    n_aux = 0 if waux is None else waux.shape[0]
    if aux is not None and n_aux != aux_width:
        raise ctx.unsupported(f"aux input weights take {n_aux} values; the aux input has {aux_width}")
    if h.size != batch * n_out or c.size != batch * n_cell:
        raise ctx.unsupported(f"states {list(h.shape)}, {list(c.shape)} do not fit {batch} rows of {n_out} "
                              f"outputs and {n_cell} cells")
    peeps = tuple(range(peep, peep + 3))
    has_peep = any(ctx.has_input(s) for s in peeps)
    p = _gate_vectors(ctx, peeps, n_cell, "peephole weights")
    rows = np.concatenate([m for m in (wx, waux, wh) if m is not None])
    w_ref, b_ref, p_ref = ctx.weight(rows), ctx.weight(b), ctx.weight(p)
    # Layer norm: coefficients, the gates' sums of a step [batch, 4, n_cell] and its cell gate g.
    ln = None if norm is None else (ctx.weight(_gate_vectors(ctx, norm, n_cell, "layer norm coefficients")),
                                    ctx.scratch((batch, 4, n_cell)), ctx.scratch((batch, n_cell)))
    subs = _cell_act(ctx, node.activation)
    cell_clip = float(node.options.cell_clip)

    def step(t: int, h_off: int, h_bs: int) -> list[Program]:
        # With a projection the step writes o * act(c) into scratch; the projection writes out[t].
        m_off, m_bs = (out.at(t), out.bs) if projection is None else (projection[0].offset, n_cell)
        params = [("n_cell", "u32", n_cell), ("n_in", "u32", n_in), ("n_aux", "u32", n_aux),
                  ("n_out", "u32", n_out), ("x_off", "u32", xs.at(t)), ("x_bs", "u32", xs.bs),
                  ("aux_off", "u32", aux.at(t) if aux is not None else 0),
                  ("aux_bs", "u32", aux.bs if aux is not None else 0), ("h_off", "u32", h_off),
                  ("h_bs", "u32", h_bs), ("c_off", "u32", c.offset), ("out_off", "u32", m_off),
                  ("out_bs", "u32", m_bs), ("w_off", "u32", w_ref.offset), ("b_off", "u32", b_ref.offset),
                  ("p_off", "u32", p_ref.offset), ("peep", "u32", int(has_peep)),
                  ("cifg", "u32", int(not ctx.has_input(base))), ("cell_clip", "f32", cell_clip)]
        name = f"{tag} t={t} {x.shape} cells={n_cell}"
        if ln is None:
            programs = [make_program(f"lstm_step{name}", "lstm_step", params, batch * n_cell,
                                     weights=ctx.weights, **subs)]
        else:
            params += [("ln_off", "u32", ln[0].offset), ("s_off", "u32", ln[1].offset), ("g_off", "u32", ln[2].offset)]
            programs = [make_program(f"lstm_norm {stage}{name}", "lstm_norm", params, batch * n_cell,
                                     weights=ctx.weights, STAGE=stage, **subs)
                        for stage in ("stage_gates", "stage_cell", "stage_out")]
        if projection is not None:
            m, pw, pb = projection
            params = [("n_cell", "u32", n_cell), ("n_out", "u32", n_out), ("m_off", "u32", m.offset),
                      ("w_off", "u32", pw.offset), ("b_off", "u32", pb.offset), ("out_off", "u32", out.at(t)),
                      ("out_bs", "u32", out.bs), ("clip", "f32", float(node.options.proj_clip))]
            programs.append(make_program(f"lstm_project{tag} t={t} {n_cell}->{n_out}", "lstm_project", params,
                                         batch * n_out, weights=ctx.weights))
        return programs
    return _sequence(ctx, step, steps, forward, out, h, batch, n_out, tag)


def _sequence(ctx: GpuContext, step: Callable[[int, int, int], list[Program]], steps: int, forward: bool,
              out: _Seq, h: TensorRef, batch: int, n_out: int, tag: str) -> list[Program]:
    """``step(t, h_off, h_bs)``'s programs for every time step, forwards or backwards, ``h_prev``
    being the output state at the first step and the previous step's output rows after it; then
    the copy of the last step's output into the output state ``h``."""
    programs: list[Program] = []
    prev = None
    for t in range(steps) if forward else range(steps - 1, -1, -1):
        h_off, h_bs = (h.offset, n_out) if prev is None else (out.at(prev), out.bs)
        programs += step(t, h_off, h_bs)
        prev = t
    if prev is not None:
        params = [("width", "u32", n_out), ("h_off", "u32", h.offset), ("src_off", "u32", out.at(prev)),
                  ("src_bs", "u32", out.bs)]
        programs.append(make_program(f"state copy{tag} {list(h.shape)}", "recurrent_state", params, batch * n_out,
                                     weights=ctx.weights))  # reads none, but the node's programs share one format
    return programs


def _check_float(ctx: GpuContext, *refs: TensorRef) -> None:
    ctx.require_f32(*refs)
    ctx.require_quant_free(0)


@register_kernel(Op.UNIDIRECTIONAL_SEQUENCE_LSTM, "webgpu")
def unidirectional_sequence_lstm(node: Node, ctx: GpuContext) -> list[Program]:
    if ctx.num_inputs not in (20, 24):
        raise ctx.unsupported(f"expected 20 or 24 inputs, got {ctx.num_inputs}")
    norm = tuple(range(20, 24)) if any(ctx.has_input(s) for s in range(20, ctx.num_inputs)) else None
    if getattr(node.options, "diagonal_recurrent_tensors", False):
        raise ctx.unsupported("diagonal recurrent weights")
    tm = bool(node.options.time_major)
    x, out = ctx.input(0), ctx.output(0)
    _check_float(ctx, x, out)
    shape = _shape(x, tm)
    batch = shape[1]
    n_cell = ctx.in_info(13).shape[-1] if ctx.has_input(13) else 0
    h = _state(ctx, 18, batch, out.shape[-1], "output state")
    c = _state(ctx, 19, batch, n_cell, "cell state")
    return _direction(node, ctx, 1, 9, 12, 16, None, x, _seq(ctx, x, tm), None, 0, _seq(ctx, out, tm), h, c,
                      shape, True, "", norm)


@dataclass(frozen=True)
class _Bidi:
    """A bidirectional op's sequences: each direction's input, the aux input both read through aux
    weights (None without them), and each direction's output rows (a merged output's halves)."""

    fw_x: TensorRef
    bw_x: TensorRef
    aux: _Seq | None
    aux_width: int
    fw_out: _Seq
    bw_out: _Seq
    n_fw: int
    n_bw: int
    time_major: bool


def _bidirectional(node: Node, ctx: GpuContext, aux_slot: int, aux_weight_slot: int, fw_state_slot: int) -> _Bidi:
    opts = node.options
    merge, tm = bool(opts.merge_outputs), bool(opts.time_major)
    if len(node.outputs) != (1 if merge else 2):
        raise ctx.unsupported(f"{len(node.outputs)} outputs with merge_outputs={merge}")
    x = ctx.input(0)
    outs = [ctx.output(k) for k in range(len(node.outputs))]
    _check_float(ctx, x, *outs)
    aux_weights = ctx.has_input(aux_weight_slot)
    aux = ctx.input(aux_slot) if ctx.has_input(aux_slot) else None
    if aux is not None:
        ctx.require_f32(aux)
        if aux.shape[:2] != x.shape[:2]:
            raise ctx.unsupported(f"aux input {list(aux.shape)} does not match input {list(x.shape)}")
    n_fw = ctx.in_info(fw_state_slot).shape[-1]
    fw_out = _seq(ctx, outs[0], tm)
    bw_out = _seq(ctx, outs[0], tm, col=n_fw) if merge else _seq(ctx, outs[1], tm)
    n_bw = outs[0].shape[-1] - n_fw if merge else outs[1].shape[-1]
    # LiteRT: an aux input without aux weights is the backward direction's own input.
    return _Bidi(x, aux if aux is not None and not aux_weights else x,
                 _seq(ctx, aux, tm) if aux is not None and aux_weights else None,
                 aux.shape[-1] if aux is not None else 0, fw_out, bw_out, n_fw, n_bw, tm)


@register_kernel(Op.BIDIRECTIONAL_SEQUENCE_LSTM, "webgpu")
def bidirectional_sequence_lstm(node: Node, ctx: GpuContext) -> list[Program]:
    if ctx.num_inputs != 48:
        raise ctx.unsupported(f"expected 48 inputs, got {ctx.num_inputs}")
    io = _bidirectional(node, ctx, 39, 41, 35)
    tm, aux_weights = io.time_major, ctx.has_input(41)
    shape = _shape(io.fw_x, tm)
    batch = shape[1]
    states = [_state(ctx, 35, batch, io.n_fw, "forward output state"),
              _state(ctx, 36, batch, ctx.in_info(36).shape[-1], "forward cell state"),
              _state(ctx, 37, batch, io.n_bw, "backward output state"),
              _state(ctx, 38, batch, ctx.in_info(38).shape[-1], "backward cell state")]
    fw = _direction(node, ctx, 1, 9, 12, 16, tuple(range(40, 44)) if aux_weights else None, io.fw_x,
                    _seq(ctx, io.fw_x, tm), io.aux, io.aux_width, io.fw_out, states[0], states[1], shape, True, " fw")
    bw = _direction(node, ctx, 18, 26, 29, 33, tuple(range(44, 48)) if aux_weights else None, io.bw_x,
                    _seq(ctx, io.bw_x, tm), io.aux, io.aux_width, io.bw_out, states[2], states[3],
                    _shape(io.bw_x, tm), False, " bw")
    return fw + bw


@register_kernel(Op.LSTM, "webgpu")
def lstm(node: Node, ctx: GpuContext) -> list[Program]:
    """One step of the full kernel: ``[batch, input]`` in, ``[batch, output]`` out (a sequence of one)."""
    if getattr(node.options, "kernel_type", 0) != 0:
        raise ctx.unsupported("the basic LSTM kernel (kernel_type BASIC)")
    if ctx.num_inputs not in (20, 24) or len(node.outputs) != 1:
        raise ctx.unsupported(f"{ctx.num_inputs} inputs and {len(node.outputs)} outputs (the full kernel: 20 or 24 "
                              "inputs, 1 output)")
    x, out = ctx.input(0), ctx.output(0)
    _check_float(ctx, x, out)
    if len(x.shape) != 2 or len(out.shape) != 2:
        raise ctx.unsupported(f"input {list(x.shape)} and output {list(out.shape)} (2-D [batch, features])")
    batch, n_in = x.shape
    n_cell = ctx.in_info(13).shape[-1] if ctx.has_input(13) else 0
    h = _state(ctx, 18, batch, out.shape[1], "output state")
    c = _state(ctx, 19, batch, n_cell, "cell state")
    norm = tuple(range(20, 24)) if any(ctx.has_input(s) for s in range(20, ctx.num_inputs)) else None
    return _direction(node, ctx, 1, 9, 12, 16, None, x, _Seq(x.offset, 0, n_in), None, 0,
                      _Seq(out.offset, 0, out.shape[1]), h, c, (1, batch, n_in), True, "", norm)


def _matrix(ctx: GpuContext, slot: int, rows: int, cols: int, what: str) -> np.ndarray:
    if not ctx.has_input(slot):
        raise ctx.unsupported(f"{what} (input {slot}) are missing")
    w = _const(ctx, slot, what)
    if w.shape != (rows, cols):
        raise ctx.unsupported(f"{what} (input {slot}) have shape {list(w.shape)}; expected [{rows}, {cols}]")
    return w


def _rnn_direction(node: Node, ctx: GpuContext, slots: tuple[int, int, int, int | None], xs: _Seq,
                   aux: _Seq | None, aux_width: int, out: _Seq, h_slot: int, shape: tuple[int, int, int],
                   forward: bool, tag: str) -> list[Program]:
    """One basic RNN direction (``rnn_step.wgsl``): ``slots`` are the input weights, recurrent
    weights, bias and aux weights (None: no aux input) as in the cpu kernel's ``RnnCell``."""
    wx_slot, wh_slot, b_slot, aux_slot = slots
    steps, batch, n_in = shape
    if not ctx.has_input(b_slot):
        raise ctx.unsupported(f"the bias (input {b_slot}) is missing")
    bias = _const(ctx, b_slot, "bias").reshape(-1)
    units = bias.size
    mats = [_matrix(ctx, wx_slot, units, n_in, "input weights")]
    if aux_slot is not None and aux is not None:
        mats.append(_matrix(ctx, aux_slot, units, aux_width, "aux input weights"))
    mats.append(_matrix(ctx, wh_slot, units, units, "recurrent weights"))
    n_aux = aux_width if len(mats) == 3 else 0
    h = _state(ctx, h_slot, batch, units, "hidden state")
    w_ref, b_ref = ctx.weight(np.concatenate([m.T for m in mats])), ctx.weight(bias)
    act = _cell_act(ctx, node.activation)["CELL_ACT"]

    def step(t: int, h_off: int, h_bs: int) -> list[Program]:
        params = [("n_units", "u32", units), ("n_in", "u32", n_in), ("n_aux", "u32", n_aux),
                  ("x_off", "u32", xs.at(t)), ("x_bs", "u32", xs.bs),
                  ("aux_off", "u32", aux.at(t) if n_aux else 0), ("aux_bs", "u32", aux.bs if n_aux else 0),
                  ("h_off", "u32", h_off), ("h_bs", "u32", h_bs), ("out_off", "u32", out.at(t)),
                  ("out_bs", "u32", out.bs), ("w_off", "u32", w_ref.offset), ("b_off", "u32", b_ref.offset)]
        return [make_program(f"rnn_step{tag} t={t} units={units}", "rnn_step", params, batch * units,
                             weights=ctx.weights, CELL_ACT=act)]
    return _sequence(ctx, step, steps, forward, out, h, batch, units, tag)


@register_kernel(Op.UNIDIRECTIONAL_SEQUENCE_RNN, "webgpu")
def unidirectional_sequence_rnn(node: Node, ctx: GpuContext) -> list[Program]:
    if ctx.num_inputs != 5:
        raise ctx.unsupported(f"expected 5 inputs, got {ctx.num_inputs}")
    tm = bool(node.options.time_major)
    x, out = ctx.input(0), ctx.output(0)
    _check_float(ctx, x, out)
    return _rnn_direction(node, ctx, (1, 2, 3, None), _seq(ctx, x, tm), None, 0, _seq(ctx, out, tm), 4,
                          _shape(x, tm), True, "")


@register_kernel(Op.BIDIRECTIONAL_SEQUENCE_RNN, "webgpu")
def bidirectional_sequence_rnn(node: Node, ctx: GpuContext) -> list[Program]:
    if ctx.num_inputs != 12:
        raise ctx.unsupported(f"expected 12 inputs, got {ctx.num_inputs}")
    io = _bidirectional(node, ctx, 9, 10, 4)
    tm, aux_weights = io.time_major, ctx.has_input(10)
    fw = _rnn_direction(node, ctx, (1, 2, 3, 10 if aux_weights else None), _seq(ctx, io.fw_x, tm), io.aux,
                        io.aux_width, io.fw_out, 4, _shape(io.fw_x, tm), True, " fw")
    bw = _rnn_direction(node, ctx, (5, 6, 7, 11 if aux_weights else None), _seq(ctx, io.bw_x, tm), io.aux,
                        io.aux_width, io.bw_out, 8, _shape(io.bw_x, tm), False, " bw")
    return fw + bw


@register_kernel(Op.RNN, "webgpu")
def rnn(node: Node, ctx: GpuContext) -> list[Program]:
    """One basic RNN step: ``[batch, input]`` in, ``[batch, units]`` out (a sequence of one)."""
    if ctx.num_inputs != 5:
        raise ctx.unsupported(f"expected 5 inputs, got {ctx.num_inputs}")
    x, out = ctx.input(0), ctx.output(0)
    _check_float(ctx, x, out)
    if len(x.shape) != 2 or len(out.shape) != 2:
        raise ctx.unsupported(f"input {list(x.shape)} and output {list(out.shape)} (2-D [batch, features])")
    batch, n_in = x.shape
    return _rnn_direction(node, ctx, (1, 2, 3, None), _Seq(x.offset, 0, n_in), None, 0,
                          _Seq(out.offset, 0, out.shape[1]), 4, (1, batch, n_in), True, "")
