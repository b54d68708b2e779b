"""Which CPU kernels run int8-quantized tensors, as LiteRT's kernels do (``gpulite ops``).

Declared here in one call for the kernels written before the declaration existed; a new
int8 kernel declares itself with ``register_kernel(op, "cpu", int8=True)`` instead.
``tests/test_ops_table.py`` builds int8 single-op models for a sample and checks the claim.
"""

from __future__ import annotations

from gpulite.backends.kernels import declare_int8
from gpulite.model.opdefs import Op

INT8_OPS = (
    # arithmetic with LiteRT's integer rescaling
    Op.CONV_2D, Op.DEPTHWISE_CONV_2D, Op.FULLY_CONNECTED, Op.ADD, Op.SUB, Op.MUL, Op.MAXIMUM, Op.MINIMUM,
    Op.MEAN, Op.REDUCE_MAX, Op.REDUCE_MIN, Op.MAX_POOL_2D, Op.AVERAGE_POOL_2D, Op.SOFTMAX,
    Op.LOGISTIC, Op.TANH, Op.RELU, Op.RELU6, Op.RELU_N1_TO_1, Op.QUANTIZE, Op.DEQUANTIZE,
    Op.EQUAL, Op.NOT_EQUAL, Op.LESS, Op.LESS_EQUAL, Op.GREATER, Op.GREATER_EQUAL, Op.ARG_MAX, Op.ARG_MIN,
    Op.CONCATENATION, Op.RESIZE_NEAREST_NEIGHBOR,
    # data movement of codes (input and output share the quantization)
    Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.PAD, Op.PADV2, Op.MIRROR_PAD, Op.SLICE,
    Op.STRIDED_SLICE, Op.PACK, Op.UNPACK, Op.SPLIT, Op.SPLIT_V, Op.TILE, Op.BROADCAST_TO, Op.REVERSE_V2,
    Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND, Op.GATHER,
    Op.GATHER_ND, Op.SELECT, Op.SELECT_V2, Op.EMBEDDING_LOOKUP,
    # issue 12's int8 kernels (bit-exact with LiteRT on every input code)
    Op.HARD_SWISH, Op.LEAKY_RELU, Op.PRELU, Op.RESIZE_BILINEAR, Op.BATCH_MATMUL, Op.TRANSPOSE_CONV,
    Op.EXP, Op.LOG, Op.SQRT, Op.RSQRT, Op.ELU, Op.GELU, Op.SQUARED_DIFFERENCE, Op.SUM, Op.L2_NORMALIZATION,
    # issue 23
    Op.ABS, Op.RELU_0_TO_1, Op.NEG, Op.FLOOR_DIV, Op.FLOOR_MOD, Op.REDUCE_PROD, Op.DIV, Op.LOG_SOFTMAX,
    # issue 23: LiteRT's kernels move, pick or combine the codes of 8/16-bit quantized tensors, scales
    # ignored (tests/ops/test_int8_codes.py, every 8-bit code against ai-edge-litert)
    Op.TOPK_V2, Op.MATRIX_DIAG, Op.MATRIX_SET_DIAG, Op.FILL, Op.SCATTER_ND, Op.DYNAMIC_UPDATE_SLICE,
    Op.SPARSE_TO_DENSE, Op.DILATE, Op.REVERSE_SEQUENCE, Op.REDUCE_WINDOW, Op.HASHTABLE_LOOKUP, Op.CAST,
    Op.RIGHT_SHIFT, Op.BITWISE_XOR, Op.BITCAST,
    # control flow and resource variables carry quantized tensors unchanged
    Op.IF, Op.WHILE, Op.READ_VARIABLE, Op.ASSIGN_VARIABLE,
)
declare_int8("cpu", *INT8_OPS)
