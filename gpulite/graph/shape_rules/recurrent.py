"""Shapes of the sequence ops: a resized sequence length (or batch, where the states allow it) follows."""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph.shapes import shape_rule
from gpulite.model.opdefs import Op


def _units(node, w: tuple[int, ...]) -> int:
    return w[1] if len(w) == 2 else w[0]  # [n_cell, n_output], or a diagonal's [n_cell]


def _sequence(node, x: tuple[int, ...], width: int) -> tuple[int, ...]:
    if len(x) != 3:
        raise ShapeError(f"node {node.index} ({node.op}): the input sequence must be 3-D, got {list(x)}")
    return (x[0], x[1], width)


@shape_rule(Op.UNIDIRECTIONAL_SEQUENCE_LSTM)
def _lstm(node, ins, consts):
    return [_sequence(node, ins[0], _units(node, ins[8]))]


@shape_rule(Op.BIDIRECTIONAL_SEQUENCE_LSTM)
def _bidi_lstm(node, ins, consts):
    fw, bw = _units(node, ins[8]), _units(node, ins[25])
    if getattr(node.options, "merge_outputs", False):
        return [_sequence(node, ins[0], fw + bw)]
    return [_sequence(node, ins[0], fw), _sequence(node, ins[0], bw)]


@shape_rule(Op.UNIDIRECTIONAL_SEQUENCE_RNN)
def _rnn(node, ins, consts):
    return [_sequence(node, ins[0], ins[1][0])]


@shape_rule(Op.BIDIRECTIONAL_SEQUENCE_RNN)
def _bidi_rnn(node, ins, consts):
    fw, bw = ins[1][0], ins[5][0]
    if getattr(node.options, "merge_outputs", False):
        return [_sequence(node, ins[0], fw + bw)]
    return [_sequence(node, ins[0], fw), _sequence(node, ins[0], bw)]


@shape_rule(Op.LSTM)
def _lstm_step(node, ins, consts):
    return [(ins[0][0], _units(node, ins[8]))] if ins[0] else [()]


@shape_rule(Op.RNN)
def _rnn_step(node, ins, consts):
    return [(ins[0][0], ins[1][0])] if ins[0] else [()]
