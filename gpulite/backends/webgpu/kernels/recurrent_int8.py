"""The full-integer UNIDIRECTIONAL_SEQUENCE_LSTM and LSTM (int8 activations, int16 cell state) under
``quantized="exact"``, bit-equal to the cpu kernel (``backends/cpu/kernels/recurrent_int8.py``,
LiteRT's ``EvalInteger8x8_16``).

The parameters are the cpu kernel's own: its :class:`IntegerLstm` is built for the node (so the
node is refused here exactly where the cpu refuses it) and its folded biases, multipliers and
gemmlowp sigmoid/tanh tables (65,536 int16 codes each) are uploaded as they are. The dispatches:

- ``lstm_int8_input.wgsl``: every gate's input part for every step, one thread per (row, gate
  column), into i32 scratch (the cpu kernel's one product before the steps);
- ``lstm_int8_step.wgsl``, one per time step: one thread per (batch row, cell) adds the recurrent
  product, the peepholes, looks the activations up, updates the cell and writes h; the steps'
  h (int8 values) and c (int16) live in i32 scratch, the first step reading the state tensors;
  with a projection the step writes the hidden values to scratch and ``lstm_int8_project.wgsl``
  (one thread per batch row and output) makes h from them; with layer norm a step is five
  dispatches of ``lstm_int8_norm.wgsl`` (the gates; each row's statistics of i, f and g; the
  cell; those of o; the output), as each gate is normalized over every cell of its row;
- ``pack_codes.wgsl``: the output sequence and the two states packed into their int8/int16
  tensors (whole words a thread, as packed codes require).

Declined (the node runs LiteRT's arithmetic on the cpu): sums that could exceed int32.
"""

from __future__ import annotations

import numpy as np

from gpulite.backends.cpu.kernels.recurrent_int8 import IntegerLstm
from gpulite.backends.kernels import declare_int8, register_case
from gpulite.backends.webgpu.context import GpuContext, TensorRef
from gpulite.backends.webgpu.program import Program, make_program
from gpulite.errors import GpuliteError
from gpulite.graph.ir import Node
from gpulite.model.opdefs import Op

_SLOTS = {"x": (1, 2, 3, 4), "h": (5, 6, 7, 8), "peephole": (9, 10, 11), "bias": (12, 13, 14, 15),
          "proj_w": 16, "proj_b": 17, "h_state": 18, "c_state": 19}
_I32 = np.iinfo(np.int32)
# A layer-norm step's dispatches of lstm_int8_norm.wgsl: (stage, first gate, gates) of the row statistics.
_NORM_STAGES = (("stage_gates", 0, 0), ("stage_stats", 0, 3), ("stage_cell", 0, 0), ("stage_stats", 3, 1),
                ("stage_out", 0, 0))


def applies(node: Node, ctx: GpuContext) -> bool:
    """An int8 LSTM under ``quantized="exact"`` (the float kernel declines int8 tensors)."""
    return ctx.quantized == "exact" and ctx.in_info(0).dtype == np.int8


def _i32(ctx: GpuContext, values: np.ndarray, what: str) -> TensorRef:
    v = np.asarray(values)
    if v.size and (v.min() < _I32.min or v.max() > _I32.max):
        raise ctx.unsupported(f"{what} exceed int32")
    return ctx.upload(v.astype(np.int32).reshape(-1))


def _cell(node: Node, ctx: GpuContext) -> IntegerLstm:
    if ctx.num_inputs not in (20, 24):
        raise ctx.unsupported(f"expected 20 or 24 inputs, got {ctx.num_inputs}")
    norm = tuple(range(20, 24)) if ctx.num_inputs == 24 else None
    if getattr(node.options, "diagonal_recurrent_tensors", False):
        raise ctx.unsupported("diagonal recurrent weights")
    for slot, what in ((18, "output state"), (19, "cell state")):
        if not ctx.has_input(slot) or not ctx.in_info(slot).is_variable:
            raise ctx.unsupported(f"{what} (input {slot}) must be a variable tensor (the kernel updates it in place)")
    try:
        cell = IntegerLstm(node, ctx, {**_SLOTS, "norm": norm})
    except GpuliteError as e:  # the cpu kernel refuses the node: so does this one
        raise ctx.unsupported(f"the cpu kernel refuses it ({e})") from None
    return cell


def _rows(x: TensorRef, time_major: bool) -> tuple[int, int, int, int]:
    """(steps, batch, time stride, batch stride) of a sequence, strides in rows."""
    if len(x.shape) == 2:  # the one-step LSTM op: [batch, width]
        return 1, x.shape[0], 0, 1
    a, b = x.shape[:2]
    return (a, b, b, 1) if time_major else (b, a, 1, b)


def _pack(name: str, elems: int, width: int, src: int, src_rs: int, dst: int, bits: int) -> Program:
    per = 32 // bits
    params = [("elems", "u32", elems), ("width", "u32", width), ("src_off", "u32", src), ("src_rs", "u32", src_rs),
              ("dst_off", "u32", dst)]
    return make_program(name, "pack_codes", params, -(-elems // per), word="u32", BITS=str(bits))


def _tables(cell: IntegerLstm, n_in: int, n_out: int) -> dict[str, np.ndarray]:
    """The cell's integer parameters laid out for the kernels: every gate its own block (the cpu
    kernel keeps the gates side by side in ``cell.order``; a CIFG input gate's block is zeros,
    never read), and ``q``, the (multiplier, shift) rows the WGSL reads at ``q_off + 2 * row``:
    input gates 0-3, recurrent gates 0-3, hidden, peepholes i/f/o, projection, layer norm gates
    0-3, then each layer norm's variance guard as (guard, 0)."""
    n = cell.n_cell
    t = {"wx": np.zeros((4, n, n_in), np.int64), "wh": np.zeros((4, n, n_out), np.int64),
         "bx": np.zeros((4, n), np.int64), "bh": np.zeros((4, n), np.int64), "q": np.zeros((21, 2), np.int64),
         "peep": np.zeros((3, n), np.int64), "lnw": np.zeros((4, n), np.int64), "lnb": np.zeros((4, n), np.int64),
         "pw": np.zeros((1, 1), np.int64), "pb": np.zeros(1, np.int64)}
    q = t["q"]
    for k, g in enumerate(cell.order):
        cols = slice(k * n, (k + 1) * n)
        t["wx"][g] = np.rint(cell.input_products.w[:, cols].T)
        t["wh"][g] = np.rint(cell.recurrent_products.w[:, cols].T)
        t["bx"][g], t["bh"][g] = cell.input_products.b[cols], cell.recurrent_products.b[cols]
        q[g] = cell.input_products.mult[k * n], cell.input_products.shift[k * n]
        q[4 + g] = cell.recurrent_products.mult[k * n], cell.recurrent_products.shift[k * n]
    q[8] = cell.hidden_mul
    for g, p in ((0, 0), (1, 1), (3, 2)):
        if g in cell.peep:
            t["peep"][p], q[9 + p] = cell.peep[g][0], cell.peep[g][1]
    if cell.proj is not None:
        t["pw"], q[12] = np.rint(cell.proj[0].T).astype(np.int64), cell.proj[2]
        t["pb"] = np.broadcast_to(np.asarray(cell.proj[1], np.int64), (n_out,))
    for g, (w, bias, m, guard) in cell.ln.items():
        t["lnw"][g], t["lnb"][g], q[13 + g], q[17 + g] = w, bias, m, (guard, 0)
    return t


def _sums_fit(t: dict[str, np.ndarray]) -> bool:
    """Whether every product sum (int8 activations) stays within int32, as LiteRT's do."""
    return all(np.abs(t[w]).sum(axis=-1).max() * 128 + np.abs(t[b]).max() <= _I32.max
               for w, b in (("wx", "bx"), ("wh", "bh"), ("pw", "pb")))


def integer_lstm(node: Node, ctx: GpuContext) -> list[Program]:
    cell = _cell(node, ctx)
    x, out = ctx.input(0), ctx.output(0)
    h_state, c_state = ctx.input(18), ctx.input(19)
    steps, batch, ts, bs = _rows(x, bool(getattr(node.options, "time_major", False)))
    n_in, n, n_out = x.shape[-1], cell.n_cell, out.shape[-1]
    if h_state.size != batch * n_out or c_state.size != batch * n or (cell.proj is None and n_out != n):
        raise ctx.unsupported(f"output {list(out.shape)} and states {list(h_state.shape)}, {list(c_state.shape)} "
                              f"do not fit {batch} rows of {n} cells")
    t = _tables(cell, n_in, n_out)
    if not _sums_fit(t):
        raise ctx.unsupported("a gate's integer sum could exceed int32")
    ref = {k: _i32(ctx, v, k).offset for k, v in t.items()}
    codes = np.concatenate([cell.sigmoid, cell.tanh_gate, cell.tanh_cell]).astype(np.int16)
    t_ref = ctx.upload(np.frombuffer(codes.tobytes(), np.uint32).copy())
    # i32 scratch: every step's input parts, the sequence's h, the cell, a projection's input
    pre, hseq = ctx.scratch((steps * batch * 4 * n,)), ctx.scratch((steps * batch * n_out,))
    c_tmp, hid = ctx.scratch((batch * n,)), ctx.scratch((batch * n,))
    name = f"{x.shape} cells={n}"
    programs = [make_program(f"lstm int8 input {name}", "lstm_int8_input",
                             [("n_cell", "u32", n), ("n_in", "u32", n_in), ("x_off", "u32", x.offset),
                              ("w_off", "u32", ref["wx"]), ("b_off", "u32", ref["bx"]), ("q_off", "u32", ref["q"]),
                              ("pre_off", "u32", pre.offset)],
                             steps * batch * 4 * n, word="u32", reduction_per_thread=n_in)]
    fixed = [("n_cell", "u32", n), ("n_out", "u32", n_out), ("proj", "u32", int(cell.proj is not None)),
             ("hid_off", "u32", hid.offset), ("wh_off", "u32", ref["wh"]), ("bh_off", "u32", ref["bh"]),
             ("q_off", "u32", ref["q"]), ("p_off", "u32", ref["peep"]), ("t_off", "u32", t_ref.offset),
             ("h_state", "u32", h_state.offset), ("c_state", "u32", c_state.offset), ("c_off", "u32", c_tmp.offset),
             ("peep", "u32", int(bool(cell.peep))), ("cifg", "u32", int(cell.cifg)),
             ("cell_shift", "i32", 30 + cell.cell_scale), ("cell_clip", "i32", cell.cell_clip),
             ("hidden_zp", "i32", cell.hidden_zp), ("h_bs", "u32", bs * n_out), ("pre_bs", "u32", bs * 4 * n)]
    norm = [("g_off", "u32", ctx.scratch((batch * 4 * n,)).offset),
            ("st_off", "u32", ctx.scratch((batch * 12,)).offset),
            ("ln_off", "u32", ref["lnw"]), ("lb_off", "u32", ref["lnb"])] if cell.ln else []
    project = [("n_cell", "u32", n), ("n_out", "u32", n_out), ("hid_off", "u32", hid.offset),
               ("w_off", "u32", ref["pw"]), ("b_off", "u32", ref["pb"]), ("q_off", "u32", ref["q"]),
               ("h_zp", "i32", cell.h_zp), ("clip", "i32", cell.proj_clip), ("h_bs", "u32", bs * n_out)]
    prev = 0
    for step in range(steps):
        row = step * ts
        params = [*fixed, ("first", "u32", int(step == 0)), ("h_prev", "u32", hseq.offset + prev * n_out),
                  ("h_out", "u32", hseq.offset + row * n_out), ("pre_row", "u32", pre.offset + row * 4 * n)]
        if not cell.ln:
            programs.append(make_program(f"lstm int8 step t={step} {name}", "lstm_int8_step", params, batch * n,
                                         word="u32", reduction_per_thread=4 * n_out))
        for stage, g0, ng in _NORM_STAGES if cell.ln else ():
            threads = batch * ng if stage == "stage_stats" else batch * n
            work = n if stage == "stage_stats" else 4 * n_out if stage == "stage_gates" else 0
            programs.append(make_program(f"lstm int8 norm {stage} t={step} {name}", "lstm_int8_norm",
                                         [*params, *norm, ("g0", "u32", g0), ("ng", "u32", max(ng, 1))],
                                         threads, word="u32", reduction_per_thread=work, STAGE=stage))
        if cell.proj is not None:
            programs.append(make_program(f"lstm int8 projection t={step} {name}", "lstm_int8_project",
                                         [*project, ("h_out", "u32", hseq.offset + row * n_out)], batch * n_out,
                                         word="u32", reduction_per_thread=n))
        prev = row
    return [*programs,
            _pack(f"lstm int8 output {list(out.shape)}", out.size, n_out, hseq.offset, n_out, out.offset, 8),
            _pack(f"lstm int8 output state {list(h_state.shape)}", batch * n_out, n_out,
                  hseq.offset + prev * n_out, bs * n_out, h_state.offset, 8),
            _pack(f"lstm int8 cell state {list(c_state.shape)}", batch * n, n, c_tmp.offset, n, c_state.offset, 16)]


for _op in (Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.LSTM):
    register_case(_op, "webgpu", applies)(integer_lstm)
declare_int8("webgpu", Op.UNIDIRECTIONAL_SEQUENCE_LSTM, Op.LSTM)
