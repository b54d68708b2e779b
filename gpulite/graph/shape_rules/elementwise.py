"""Shapes of elementwise, activation and (de)quantize ops.

Binary ops broadcast numpy-style (TFLite's rule too); unary ops, activations, SOFTMAX,
QUANTIZE, DEQUANTIZE and ZEROS_LIKE keep their input's shape.
"""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph.shapes import broadcast, shape_rule
from gpulite.model.opdefs import Op

BINARY = (Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.MAXIMUM, Op.MINIMUM, Op.SQUARED_DIFFERENCE, Op.POW,
          Op.FLOOR_DIV, Op.FLOOR_MOD, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.EQUAL, Op.NOT_EQUAL,
          Op.LOGICAL_AND, Op.LOGICAL_OR)
UNARY = (Op.RELU, Op.RELU6, Op.RELU_N1_TO_1, Op.RELU_0_TO_1, Op.LOGISTIC, Op.TANH, Op.HARD_SWISH, Op.LEAKY_RELU,
         Op.EXP, Op.SQRT, Op.RSQRT, Op.ABS, Op.NEG, Op.LOG, Op.SIN, Op.COS, Op.FLOOR, Op.CEIL, Op.ROUND, Op.SQUARE,
         Op.ELU, Op.GELU, Op.QUANTIZE, Op.DEQUANTIZE, Op.CAST, Op.SOFTMAX, Op.LOG_SOFTMAX, Op.SIGN, Op.ZEROS_LIKE,
         Op.LOGICAL_NOT, Op.CUMSUM, Op.REVERSE_V2)  # output shape = input 0's shape


@shape_rule(*BINARY)
def _binary(node, ins, consts):
    return [broadcast(ins[0], ins[1], node)]


@shape_rule(*UNARY)
def _unary(node, ins, consts):
    return [tuple(ins[0])]


@shape_rule(Op.PRELU)
def _prelu(node, ins, consts):
    # alpha broadcasts against the input but may not grow it (TFLite checks output == input).
    out = broadcast(ins[0], ins[1], node)
    if out != tuple(ins[0]):
        raise ShapeError(f"node {node.index} (PRELU): alpha {list(ins[1])} would broadcast input "
                         f"{list(ins[0])} to {list(out)}; the output must keep the input's shape")
    return [out]
