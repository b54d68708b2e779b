"""Shapes of elementwise, activation and (de)quantize ops.

Binary ops broadcast numpy-style (TFLite's rule too); unary ops, activations, SOFTMAX,
QUANTIZE and DEQUANTIZE keep their input's shape.
"""

from __future__ import annotations

from gpulite.errors import ShapeError
from gpulite.graph.shapes import broadcast, shape_rule

BINARY = ("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW",
          "FLOOR_DIV", "FLOOR_MOD", "LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "EQUAL", "NOT_EQUAL")
UNARY = ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "HARD_SWISH", "LEAKY_RELU",
         "EXP", "SQRT", "RSQRT", "ABS", "NEG", "LOG", "SIN", "COS", "FLOOR", "CEIL", "ROUND", "SQUARE",
         "ELU", "GELU", "QUANTIZE", "DEQUANTIZE", "CAST", "SOFTMAX", "LOG_SOFTMAX", "SIGN")


@shape_rule(*BINARY)
def _binary(node, ins, consts):
    return [broadcast(ins[0], ins[1], node)]


@shape_rule(*UNARY)
def _unary(node, ins, consts):
    return [tuple(ins[0])]


@shape_rule("PRELU")
def _prelu(node, ins, consts):
    # alpha broadcasts against the input but may not grow it (TFLite checks output == input).
    out = broadcast(ins[0], ins[1], node)
    if out != tuple(ins[0]):
        raise ShapeError(f"node {node.index} (PRELU): alpha {list(ins[1])} would broadcast input "
                         f"{list(ins[0])} to {list(out)}; the output must keep the input's shape")
    return [out]
