"""Op facts defined once: the :class:`Op` enum, its per-op table, and :class:`FusedActivation`.

:class:`Op` names every TFLite builtin operator (the schema's ``BuiltinOperator``), the
MediaPipe custom ops gpulite knows and TFLite's ``TFLite_Detection_PostProcess``. It is a
``str`` enum whose values are the names models and kernels use (``"CONV_2D"``,
``"TransformLandmarks"``), so ``node.op == "CONV_2D"`` and dicts
keyed by either spelling keep working, and f-strings print the bare name. The reader gives
``Node.op`` an :class:`Op`, or a :class:`CustomOp` for a custom code gpulite does not know
(such a model loads, and ``allocate_tensors`` then reports the op as unsupported unless a
kernel was registered for it).

Each op's facts live in one :class:`OpSpec` (``Op.X.spec``): its builtin code, the dataclass
``node.options`` holds, and for custom ops the decoder that turns ``custom_options`` bytes
into that dataclass at load, and its :class:`Operands`: how many inputs and outputs a node
has, which inputs may be omitted, which tensors share a dtype, which inputs are indices and
which ones gpulite's kernels need constant. ``gpulite.graph.validate`` checks every node
against them once, when the Interpreter builds the graph.

A user's own custom op is declared once with :func:`declare_custom_op` (optionally with a
decoder for its options); :func:`gpulite.register_kernel` then accepts its name.

:class:`FusedActivation` is the fused activation of a node with the clamp range TFLite's
``CalculateActivationRange`` gives it; every kernel reads its bounds from there.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import numpy as np

from gpulite.errors import brief
from gpulite.model import custom_options as co
from gpulite.model import schema_gen as sg

__all__ = ["CustomOp", "FusedActivation", "Op", "OpName", "OpSpec", "Operands", "declare_custom_op",
           "decode_custom_options", "op_named", "op_of", "op_spec"]


class Op(StrEnum):
    """A TFLite builtin operator or a MediaPipe custom op; the value is the name models use."""

    # The schema's BuiltinOperator, in code order (tests/ops/test_opdefs.py keeps them in step).
    ADD = "ADD"
    AVERAGE_POOL_2D = "AVERAGE_POOL_2D"
    CONCATENATION = "CONCATENATION"
    CONV_2D = "CONV_2D"
    DEPTHWISE_CONV_2D = "DEPTHWISE_CONV_2D"
    DEPTH_TO_SPACE = "DEPTH_TO_SPACE"
    DEQUANTIZE = "DEQUANTIZE"
    EMBEDDING_LOOKUP = "EMBEDDING_LOOKUP"
    FLOOR = "FLOOR"
    FULLY_CONNECTED = "FULLY_CONNECTED"
    HASHTABLE_LOOKUP = "HASHTABLE_LOOKUP"
    L2_NORMALIZATION = "L2_NORMALIZATION"
    L2_POOL_2D = "L2_POOL_2D"
    LOCAL_RESPONSE_NORMALIZATION = "LOCAL_RESPONSE_NORMALIZATION"
    LOGISTIC = "LOGISTIC"
    LSH_PROJECTION = "LSH_PROJECTION"
    LSTM = "LSTM"
    MAX_POOL_2D = "MAX_POOL_2D"
    MUL = "MUL"
    RELU = "RELU"
    RELU_N1_TO_1 = "RELU_N1_TO_1"
    RELU6 = "RELU6"
    RESHAPE = "RESHAPE"
    RESIZE_BILINEAR = "RESIZE_BILINEAR"
    RNN = "RNN"
    SOFTMAX = "SOFTMAX"
    SPACE_TO_DEPTH = "SPACE_TO_DEPTH"
    SVDF = "SVDF"
    TANH = "TANH"
    CONCAT_EMBEDDINGS = "CONCAT_EMBEDDINGS"
    SKIP_GRAM = "SKIP_GRAM"
    CALL = "CALL"
    CUSTOM = "CUSTOM"
    EMBEDDING_LOOKUP_SPARSE = "EMBEDDING_LOOKUP_SPARSE"
    PAD = "PAD"
    UNIDIRECTIONAL_SEQUENCE_RNN = "UNIDIRECTIONAL_SEQUENCE_RNN"
    GATHER = "GATHER"
    BATCH_TO_SPACE_ND = "BATCH_TO_SPACE_ND"
    SPACE_TO_BATCH_ND = "SPACE_TO_BATCH_ND"
    TRANSPOSE = "TRANSPOSE"
    MEAN = "MEAN"
    SUB = "SUB"
    DIV = "DIV"
    SQUEEZE = "SQUEEZE"
    UNIDIRECTIONAL_SEQUENCE_LSTM = "UNIDIRECTIONAL_SEQUENCE_LSTM"
    STRIDED_SLICE = "STRIDED_SLICE"
    BIDIRECTIONAL_SEQUENCE_RNN = "BIDIRECTIONAL_SEQUENCE_RNN"
    EXP = "EXP"
    TOPK_V2 = "TOPK_V2"
    SPLIT = "SPLIT"
    LOG_SOFTMAX = "LOG_SOFTMAX"
    DELEGATE = "DELEGATE"
    BIDIRECTIONAL_SEQUENCE_LSTM = "BIDIRECTIONAL_SEQUENCE_LSTM"
    CAST = "CAST"
    PRELU = "PRELU"
    MAXIMUM = "MAXIMUM"
    ARG_MAX = "ARG_MAX"
    MINIMUM = "MINIMUM"
    LESS = "LESS"
    NEG = "NEG"
    PADV2 = "PADV2"
    GREATER = "GREATER"
    GREATER_EQUAL = "GREATER_EQUAL"
    LESS_EQUAL = "LESS_EQUAL"
    SELECT = "SELECT"
    SLICE = "SLICE"
    SIN = "SIN"
    TRANSPOSE_CONV = "TRANSPOSE_CONV"
    SPARSE_TO_DENSE = "SPARSE_TO_DENSE"
    TILE = "TILE"
    EXPAND_DIMS = "EXPAND_DIMS"
    EQUAL = "EQUAL"
    NOT_EQUAL = "NOT_EQUAL"
    LOG = "LOG"
    SUM = "SUM"
    SQRT = "SQRT"
    RSQRT = "RSQRT"
    SHAPE = "SHAPE"
    POW = "POW"
    ARG_MIN = "ARG_MIN"
    FAKE_QUANT = "FAKE_QUANT"
    REDUCE_PROD = "REDUCE_PROD"
    REDUCE_MAX = "REDUCE_MAX"
    PACK = "PACK"
    LOGICAL_OR = "LOGICAL_OR"
    ONE_HOT = "ONE_HOT"
    LOGICAL_AND = "LOGICAL_AND"
    LOGICAL_NOT = "LOGICAL_NOT"
    UNPACK = "UNPACK"
    REDUCE_MIN = "REDUCE_MIN"
    FLOOR_DIV = "FLOOR_DIV"
    REDUCE_ANY = "REDUCE_ANY"
    SQUARE = "SQUARE"
    ZEROS_LIKE = "ZEROS_LIKE"
    FILL = "FILL"
    FLOOR_MOD = "FLOOR_MOD"
    RANGE = "RANGE"
    RESIZE_NEAREST_NEIGHBOR = "RESIZE_NEAREST_NEIGHBOR"
    LEAKY_RELU = "LEAKY_RELU"
    SQUARED_DIFFERENCE = "SQUARED_DIFFERENCE"
    MIRROR_PAD = "MIRROR_PAD"
    ABS = "ABS"
    SPLIT_V = "SPLIT_V"
    UNIQUE = "UNIQUE"
    CEIL = "CEIL"
    REVERSE_V2 = "REVERSE_V2"
    ADD_N = "ADD_N"
    GATHER_ND = "GATHER_ND"
    COS = "COS"
    WHERE = "WHERE"
    RANK = "RANK"
    ELU = "ELU"
    REVERSE_SEQUENCE = "REVERSE_SEQUENCE"
    MATRIX_DIAG = "MATRIX_DIAG"
    QUANTIZE = "QUANTIZE"
    MATRIX_SET_DIAG = "MATRIX_SET_DIAG"
    ROUND = "ROUND"
    HARD_SWISH = "HARD_SWISH"
    IF = "IF"
    WHILE = "WHILE"
    NON_MAX_SUPPRESSION_V4 = "NON_MAX_SUPPRESSION_V4"
    NON_MAX_SUPPRESSION_V5 = "NON_MAX_SUPPRESSION_V5"
    SCATTER_ND = "SCATTER_ND"
    SELECT_V2 = "SELECT_V2"
    DENSIFY = "DENSIFY"
    SEGMENT_SUM = "SEGMENT_SUM"
    BATCH_MATMUL = "BATCH_MATMUL"
    PLACEHOLDER_FOR_GREATER_OP_CODES = "PLACEHOLDER_FOR_GREATER_OP_CODES"
    CUMSUM = "CUMSUM"
    CALL_ONCE = "CALL_ONCE"
    BROADCAST_TO = "BROADCAST_TO"
    RFFT2D = "RFFT2D"
    CONV_3D = "CONV_3D"
    IMAG = "IMAG"
    REAL = "REAL"
    COMPLEX_ABS = "COMPLEX_ABS"
    HASHTABLE = "HASHTABLE"
    HASHTABLE_FIND = "HASHTABLE_FIND"
    HASHTABLE_IMPORT = "HASHTABLE_IMPORT"
    HASHTABLE_SIZE = "HASHTABLE_SIZE"
    REDUCE_ALL = "REDUCE_ALL"
    CONV_3D_TRANSPOSE = "CONV_3D_TRANSPOSE"
    VAR_HANDLE = "VAR_HANDLE"
    READ_VARIABLE = "READ_VARIABLE"
    ASSIGN_VARIABLE = "ASSIGN_VARIABLE"
    BROADCAST_ARGS = "BROADCAST_ARGS"
    RANDOM_STANDARD_NORMAL = "RANDOM_STANDARD_NORMAL"
    BUCKETIZE = "BUCKETIZE"
    RANDOM_UNIFORM = "RANDOM_UNIFORM"
    MULTINOMIAL = "MULTINOMIAL"
    GELU = "GELU"
    DYNAMIC_UPDATE_SLICE = "DYNAMIC_UPDATE_SLICE"
    RELU_0_TO_1 = "RELU_0_TO_1"
    UNSORTED_SEGMENT_PROD = "UNSORTED_SEGMENT_PROD"
    UNSORTED_SEGMENT_MAX = "UNSORTED_SEGMENT_MAX"
    UNSORTED_SEGMENT_SUM = "UNSORTED_SEGMENT_SUM"
    ATAN2 = "ATAN2"
    UNSORTED_SEGMENT_MIN = "UNSORTED_SEGMENT_MIN"
    SIGN = "SIGN"
    BITCAST = "BITCAST"
    BITWISE_XOR = "BITWISE_XOR"
    RIGHT_SHIFT = "RIGHT_SHIFT"
    STABLEHLO_LOGISTIC = "STABLEHLO_LOGISTIC"
    STABLEHLO_ADD = "STABLEHLO_ADD"
    STABLEHLO_DIVIDE = "STABLEHLO_DIVIDE"
    STABLEHLO_MULTIPLY = "STABLEHLO_MULTIPLY"
    STABLEHLO_MAXIMUM = "STABLEHLO_MAXIMUM"
    STABLEHLO_RESHAPE = "STABLEHLO_RESHAPE"
    STABLEHLO_CLAMP = "STABLEHLO_CLAMP"
    STABLEHLO_CONCATENATE = "STABLEHLO_CONCATENATE"
    STABLEHLO_BROADCAST_IN_DIM = "STABLEHLO_BROADCAST_IN_DIM"
    STABLEHLO_CONVOLUTION = "STABLEHLO_CONVOLUTION"
    STABLEHLO_SLICE = "STABLEHLO_SLICE"
    STABLEHLO_CUSTOM_CALL = "STABLEHLO_CUSTOM_CALL"
    STABLEHLO_REDUCE = "STABLEHLO_REDUCE"
    STABLEHLO_ABS = "STABLEHLO_ABS"
    STABLEHLO_AND = "STABLEHLO_AND"
    STABLEHLO_COSINE = "STABLEHLO_COSINE"
    STABLEHLO_EXPONENTIAL = "STABLEHLO_EXPONENTIAL"
    STABLEHLO_FLOOR = "STABLEHLO_FLOOR"
    STABLEHLO_LOG = "STABLEHLO_LOG"
    STABLEHLO_MINIMUM = "STABLEHLO_MINIMUM"
    STABLEHLO_NEGATE = "STABLEHLO_NEGATE"
    STABLEHLO_OR = "STABLEHLO_OR"
    STABLEHLO_POWER = "STABLEHLO_POWER"
    STABLEHLO_REMAINDER = "STABLEHLO_REMAINDER"
    STABLEHLO_RSQRT = "STABLEHLO_RSQRT"
    STABLEHLO_SELECT = "STABLEHLO_SELECT"
    STABLEHLO_SUBTRACT = "STABLEHLO_SUBTRACT"
    STABLEHLO_TANH = "STABLEHLO_TANH"
    STABLEHLO_SCATTER = "STABLEHLO_SCATTER"
    STABLEHLO_COMPARE = "STABLEHLO_COMPARE"
    STABLEHLO_CONVERT = "STABLEHLO_CONVERT"
    STABLEHLO_DYNAMIC_SLICE = "STABLEHLO_DYNAMIC_SLICE"
    STABLEHLO_DYNAMIC_UPDATE_SLICE = "STABLEHLO_DYNAMIC_UPDATE_SLICE"
    STABLEHLO_PAD = "STABLEHLO_PAD"
    STABLEHLO_IOTA = "STABLEHLO_IOTA"
    STABLEHLO_DOT_GENERAL = "STABLEHLO_DOT_GENERAL"
    STABLEHLO_REDUCE_WINDOW = "STABLEHLO_REDUCE_WINDOW"
    STABLEHLO_SORT = "STABLEHLO_SORT"
    STABLEHLO_WHILE = "STABLEHLO_WHILE"
    STABLEHLO_GATHER = "STABLEHLO_GATHER"
    STABLEHLO_TRANSPOSE = "STABLEHLO_TRANSPOSE"
    DILATE = "DILATE"
    STABLEHLO_RNG_BIT_GENERATOR = "STABLEHLO_RNG_BIT_GENERATOR"
    REDUCE_WINDOW = "REDUCE_WINDOW"
    STABLEHLO_COMPOSITE = "STABLEHLO_COMPOSITE"
    STABLEHLO_SHIFT_LEFT = "STABLEHLO_SHIFT_LEFT"
    STABLEHLO_CBRT = "STABLEHLO_CBRT"
    STABLEHLO_CASE = "STABLEHLO_CASE"
    # MediaPipe custom ops (mediapipe/util/tflite/operations): the value is the custom code.
    Convolution2DTransposeBias = "Convolution2DTransposeBias"
    MaxPoolingWithArgmax2D = "MaxPoolingWithArgmax2D"
    MaxUnpooling2D = "MaxUnpooling2D"
    Landmarks2TransformMatrix = "Landmarks2TransformMatrix"
    TransformLandmarks = "TransformLandmarks"
    TransformTensorBilinear = "TransformTensorBilinear"
    # TFLite's SSD post-processing custom op (lite/kernels/detection_postprocess.cc).
    TFLite_Detection_PostProcess = "TFLite_Detection_PostProcess"

    @property
    def spec(self) -> OpSpec:
        """This op's facts (builtin code, options type, custom-options decoder)."""
        return _SPECS[self]

    @property
    def is_custom(self) -> bool:
        """True for a custom op (a MediaPipe op), False for a builtin operator."""
        return self.spec.code == _CUSTOM and self is not Op.CUSTOM

    @classmethod
    def from_code(cls, code: int) -> Op:
        """The builtin operator with schema code ``code`` (``ValueError`` if there is none)."""
        return cls(sg.BuiltinOperator(code).name)


# Ops that read or write the integer codes of a quantized tensor, not the value they stand for
# (LiteRT's NEG, FLOOR_DIV and FLOOR_MOD compute on int8/int16 codes and ignore the scales;
# SCATTER_ND fills code 0 and adds the update codes). A float rewrite of a quantized graph keeps
# their tensors integer (gpulite/backends/webgpu/quantized.py; the op table's int8 columns).
RAW_OPS = frozenset({Op.QUANTIZE, Op.DEQUANTIZE, Op.CAST, Op.BITCAST, Op.BITWISE_XOR, Op.RIGHT_SHIFT,
                     Op.NEG, Op.FLOOR_DIV, Op.FLOOR_MOD, Op.SCATTER_ND})


class CustomOp(str):
    """A custom op that is not an :class:`Op` member: its custom code, as the model names it.

    The reader makes one for a custom code gpulite does not know; :func:`declare_custom_op`
    makes one for a user's op.
    """

    __slots__ = ()
    is_custom = True

    def __repr__(self) -> str:
        return f"CustomOp({str.__repr__(self)})"


OpName = Op | CustomOp
CustomDecoder = Callable[[bytes | None], Any]


@dataclass(frozen=True)
class Operands:
    """What a node of one op must look like: TFLite's ``Prepare`` checks (``lite/kernels/*.cc``).

    Attributes
    ----------
    inputs, outputs : (int, int or None)
        The least and most number of inputs/outputs (None: no upper bound), as the kernel's
        ``NumInputs(node) == ...`` / ``TF_LITE_ENSURE`` allows them.
    optional : tuple of int
        Input positions that may be omitted (tensor index -1); any other omitted input is an error.
    same_dtype : tuple of str
        Tensors that must share one dtype: ``"i0"``, ``"o0"`` name one input or output, ``"i*"``
        every input (an omitted input is skipped).
    index_inputs : tuple of int
        Inputs that must be int32 or int64 (shapes, axes, paddings, permutations).
    bias : int or None
        The input holding one bias per output channel (the output's last dimension), float32
        for a float32 input, int32 for int8/uint8, int32 or int64 for int16.
    const_inputs : tuple of int
        Inputs gpulite's kernels need constant (known at load); LiteRT may take them at run
        time, so a variable one is an :class:`~gpulite.errors.UnsupportedOpError`, not a malformed file.
    same_quant : tuple of str
        Quantized tensors (keys as ``same_dtype``, ``"o*"`` for every output) that LiteRT's Prepare
        requires to share one scale and zero point (its kernel copies codes and cannot rescale),
        for inputs of the dtypes ``same_quant_dtypes``.
    quant_refused : tuple of str
        The 8/16-bit dtypes of which LiteRT's kernel refuses quantized tensors at prepare (any
        input or output with a scale). Both refusals are
        :class:`~gpulite.errors.UnsupportedOpError` on every backend, also where webgpu's
        ``quantized="float"`` would compute the node in float.
    """

    inputs: tuple[int, int | None]
    outputs: tuple[int, int | None] = (1, 1)
    optional: tuple[int, ...] = ()
    same_dtype: tuple[str, ...] = ()
    index_inputs: tuple[int, ...] = ()
    const_inputs: tuple[int, ...] = ()
    bias: int | None = None
    same_quant: tuple[str, ...] = ()
    same_quant_dtypes: tuple[str, ...] = ("int8", "uint8", "int16")
    quant_refused: tuple[str, ...] = ()


@dataclass(frozen=True)
class OpSpec:
    """What gpulite knows about one op.

    Attributes
    ----------
    code : int
        The schema's ``BuiltinOperator`` code (``CUSTOM``, 32, for a custom op).
    options : type or None
        The frozen dataclass ``node.options`` holds: a ``schema_gen`` options table for a
        builtin, the decoded custom-options type for a custom op; None when it has none.
    decode : callable or None
        Custom ops only: turns the operator's ``custom_options`` bytes into ``options``,
        raising :class:`~gpulite.errors.ModelError` for a malformed blob. Run once, at load.
    decode_versions : tuple of int or None
        The op versions whose options ``decode`` reads (None: every version). Other versions
        keep ``node.options = None``; their kernels refuse them.
    operands : Operands or None
        The node's inputs and outputs as the op needs them; None (an op without an entry)
        checks nothing.
    """

    code: int
    options: type | None = None
    decode: CustomDecoder | None = None
    decode_versions: tuple[int, ...] | None = None
    operands: Operands | None = None


# Builtin options tables whose name is not the op's name in CamelCase + "Options".
_SHARED_OPTIONS = {
    "AVERAGE_POOL_2D": "Pool2DOptions", "MAX_POOL_2D": "Pool2DOptions", "L2_POOL_2D": "Pool2DOptions",
    "L2_NORMALIZATION": "L2NormOptions", "MAXIMUM": "MaximumMinimumOptions", "MINIMUM": "MaximumMinimumOptions",
    "MEAN": "ReducerOptions", "SUM": "ReducerOptions", "REDUCE_PROD": "ReducerOptions",
    "REDUCE_MAX": "ReducerOptions", "REDUCE_MIN": "ReducerOptions", "REDUCE_ANY": "ReducerOptions",
    "REDUCE_ALL": "ReducerOptions", "UNIDIRECTIONAL_SEQUENCE_RNN": "SequenceRNNOptions",
    "RANDOM_STANDARD_NORMAL": "RandomOptions", "RANDOM_UNIFORM": "RandomOptions", "MULTINOMIAL": "RandomOptions",
    "CONV_3D_TRANSPOSE": "Conv3DOptions",
}
_OPTION_TABLES = {name.lower(): name for name in (*sg.BuiltinOptions.__members__, *sg.BuiltinOptions2.__members__)
                  if name != "NONE"}


def _builtin_options(name: str) -> type | None:
    table = _SHARED_OPTIONS.get(name) or _OPTION_TABLES.get(name.replace("_", "").lower() + "options")
    return None if table is None else getattr(sg, table)


# -- operands: the arity TFLite's kernels check in Prepare (lite/kernels/*.cc), dtypes, constness --
_UNARY = Operands((1, 1), same_dtype=("i0", "o0"))
_BINARY = Operands((2, 2), same_dtype=("i0", "i1", "o0"))
_COMPARE = Operands((2, 2), same_dtype=("i0", "i1"))
_REDUCE = Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,), const_inputs=(1,))
_OPERANDS: dict[str, Operands] = {
    **dict.fromkeys(("ABS", "CEIL", "COS", "ELU", "EXP", "FLOOR", "GELU", "HARD_SWISH", "LEAKY_RELU", "LOG",
                     "LOGISTIC", "NEG", "RELU", "RELU6", "RELU_0_TO_1", "RELU_N1_TO_1", "ROUND", "RSQRT", "SIGN",
                     "SIN", "SQRT", "SQUARE", "TANH", "ZEROS_LIKE", "SQUEEZE", "DEPTH_TO_SPACE", "SPACE_TO_DEPTH",
                     "AVERAGE_POOL_2D", "MAX_POOL_2D", "L2_POOL_2D", "L2_NORMALIZATION",
                     "LOCAL_RESPONSE_NORMALIZATION"), _UNARY),
    **dict.fromkeys(("CAST", "DEQUANTIZE", "QUANTIZE", "DENSIFY", "SOFTMAX", "LOG_SOFTMAX", "SHAPE", "WHERE",
                     "FAKE_QUANT", "LOGICAL_NOT"), Operands((1, 1))),
    **dict.fromkeys(("ADD", "SUB", "MUL", "DIV", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "POW", "FLOOR_DIV",
                     "FLOOR_MOD"), _BINARY),
    "PRELU": Operands((2, 2), same_dtype=("i0", "o0")),  # int16 input, int8 alpha in the 16x8 mode
    **dict.fromkeys(("LESS", "LESS_EQUAL", "GREATER", "GREATER_EQUAL", "EQUAL", "NOT_EQUAL", "LOGICAL_AND",
                     "LOGICAL_OR"), _COMPARE),
    **dict.fromkeys(("MEAN", "SUM"), _REDUCE),
    # 8-bit ones across quantizations run in XNNPACK (the extreme code); reduce.cc refuses int16 ones
    **dict.fromkeys(("REDUCE_MAX", "REDUCE_MIN"), dataclasses.replace(_REDUCE, same_quant=("i0", "o0"),
                                                                       same_quant_dtypes=("int16",))),
    **dict.fromkeys(("REDUCE_PROD", "REDUCE_ANY", "REDUCE_ALL"), Operands((2, 2), same_dtype=("i0", "o0"),
                                                                        index_inputs=(1,))),
    **dict.fromkeys(("ARG_MAX", "ARG_MIN"), Operands((2, 2), index_inputs=(1,), const_inputs=(1,))),
    **dict.fromkeys(("RESIZE_BILINEAR", "RESIZE_NEAREST_NEIGHBOR"), Operands((2, 2), same_dtype=("i0", "o0"),
                                                                            index_inputs=(1,))),
    **dict.fromkeys(("PAD", "PADV2"), Operands((2, 3), same_dtype=("i0", "i2", "o0"), const_inputs=(1,))),
    "CONCATENATION": Operands((1, None), same_dtype=("i*", "o0")),
    "PACK": Operands((1, None), same_dtype=("i*", "o0"), same_quant=("i*", "o0")),
    "UNPACK": Operands((1, 1), (1, None), same_quant=("i0", "o*")),
    "CONV_2D": Operands((2, 3), optional=(2,), same_dtype=("i0", "o0"), bias=2),
    "DEPTHWISE_CONV_2D": Operands((2, 3), optional=(2,), same_dtype=("i0", "o0"), const_inputs=(1, 2), bias=2),
    "TRANSPOSE_CONV": Operands((3, 4), optional=(3,), index_inputs=(0,), const_inputs=(1, 3), bias=3),
    "FULLY_CONNECTED": Operands((2, 3), (1, 2), optional=(2,), bias=2),
    "BATCH_MATMUL": Operands((2, 2)),
    "RESHAPE": Operands((1, 2), optional=(1,), same_dtype=("i0", "o0"), index_inputs=(1,)),
    "EXPAND_DIMS": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,), const_inputs=(1,),
                            same_quant=("i0", "o0")),
    "TRANSPOSE": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,), const_inputs=(1,)),
    "GATHER": Operands((2, 2), same_dtype=("i0", "o0")),
    "SLICE": Operands((3, 3), same_dtype=("i0", "o0"), index_inputs=(1, 2), const_inputs=(1, 2)),
    "STRIDED_SLICE": Operands((4, 4), same_dtype=("i0", "o0"), index_inputs=(1, 2, 3), const_inputs=(1, 2, 3)),
    "TILE": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,)),
    "BROADCAST_TO": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,)),
    "MIRROR_PAD": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,), same_quant=("i0", "o0")),
    "FILL": Operands((2, 2), index_inputs=(0,)),
    "SPLIT": Operands((2, 2), (1, None), index_inputs=(0,)),
    "SPLIT_V": Operands((3, 3), (1, None), index_inputs=(1, 2)),
    "SELECT": Operands((3, 3), same_dtype=("i1", "i2", "o0")),
    "SELECT_V2": Operands((3, 3), same_dtype=("i1", "i2", "o0")),
    **dict.fromkeys(("SPACE_TO_BATCH_ND", "BATCH_TO_SPACE_ND"), Operands(
        (3, 3), same_dtype=("i0", "o0"), index_inputs=(1, 2), same_quant=("i0", "o0"))),
    "TOPK_V2": Operands((2, 2), (2, 2)),
    "ONE_HOT": Operands((4, 4)),
    "RANGE": Operands((3, 3)),
    "EMBEDDING_LOOKUP": Operands((2, 2)),
    "GATHER_ND": Operands((2, 2)),
    "SCATTER_ND": Operands((3, 3), quant_refused=("int16",)),
    "REVERSE_V2": Operands((2, 2)),
    "CUMSUM": Operands((2, 2)),
    "ADD_N": Operands((2, None), same_dtype=("i*", "o0")),
    # signal, detection, matrix and the remaining builtins (lite/kernels/*.cc Prepare)
    "MATRIX_DIAG": Operands((1, 1), same_dtype=("i0", "o0")),
    "MATRIX_SET_DIAG": Operands((2, 2), same_dtype=("i0", "i1", "o0")),
    "RFFT2D": Operands((2, 2), index_inputs=(1,)),
    **dict.fromkeys(("COMPLEX_ABS", "REAL", "IMAG"), Operands((1, 1))),
    "NON_MAX_SUPPRESSION_V4": Operands((5, 5), (2, 2), same_dtype=("i0", "i1"), index_inputs=(2,)),
    "NON_MAX_SUPPRESSION_V5": Operands((6, 6), (3, 3), same_dtype=("i0", "i1", "o1"), index_inputs=(2,)),
    "TFLite_Detection_PostProcess": Operands((3, 3), (4, 4)),
    **dict.fromkeys(("ATAN2", "RIGHT_SHIFT", "BITWISE_XOR"), _BINARY),
    "SEGMENT_SUM": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,)),
    **dict.fromkeys(("UNSORTED_SEGMENT_SUM", "UNSORTED_SEGMENT_PROD", "UNSORTED_SEGMENT_MAX",
                     "UNSORTED_SEGMENT_MIN"), Operands((3, 3), same_dtype=("i0", "o0"), index_inputs=(1, 2))),
    "REVERSE_SEQUENCE": Operands((2, 2), same_dtype=("i0", "o0"), index_inputs=(1,), quant_refused=("int8",)),
    "DYNAMIC_UPDATE_SLICE": Operands((3, 3), same_dtype=("i0", "i1", "o0"), index_inputs=(2,)),
    "BUCKETIZE": Operands((1, 1)),
    "SPARSE_TO_DENSE": Operands((4, 4), same_dtype=("i2", "i3", "o0"), index_inputs=(0, 1), quant_refused=("int16",)),
    **dict.fromkeys(("RANDOM_UNIFORM", "RANDOM_STANDARD_NORMAL"), Operands((1, 1), index_inputs=(0,))),
    "MULTINOMIAL": Operands((2, 2), index_inputs=(1,)),
    "DILATE": Operands((3, 3), same_dtype=("i0", "i2", "o0"), index_inputs=(1,)),
    "HASHTABLE_LOOKUP": Operands((3, 3), (2, 2), same_dtype=("i2", "o0")),
    "REDUCE_WINDOW": Operands((5, 5), same_dtype=("i0", "i1", "o0"), index_inputs=(2, 3, 4)),
    "EMBEDDING_LOOKUP_SPARSE": Operands((5, 5), same_dtype=("i3", "i4", "o0"), index_inputs=(0, 1, 2)),
    "CONV_3D": Operands((2, 3), optional=(2,), same_dtype=("i0", "o0"), bias=2),
    "CONV_3D_TRANSPOSE": Operands((3, 4), optional=(3,), same_dtype=("i2", "o0"), index_inputs=(0,), bias=3),
    # recurrent (lstm_eval.cc: CIFG, peephole, projection, layer norm and aux inputs are optional)
    "UNIDIRECTIONAL_SEQUENCE_LSTM": Operands((20, 24), optional=(1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23),
                                             same_dtype=("i0", "o0")),
    "BIDIRECTIONAL_SEQUENCE_LSTM": Operands((48, 48), (1, 2), optional=(
        1, 5, 9, 10, 11, 12, 16, 17, 18, 22, 26, 27, 28, 29, 33, 34, *range(39, 48)), same_dtype=("i0", "o0")),
    "UNIDIRECTIONAL_SEQUENCE_RNN": Operands((5, 5), same_dtype=("i0", "o0")),
    "BIDIRECTIONAL_SEQUENCE_RNN": Operands((12, 12), (1, 2), optional=(9, 10, 11), same_dtype=("i0", "o0")),
    "LSTM": Operands((5, 24), (1, 4), optional=(1, 5, 9, 10, 11, 12, 16, 17, 20, 21, 22, 23)),
    "RNN": Operands((5, 5), same_dtype=("i0", "o0")),
    # control flow: the subgraphs' arity is checked against the node's by graph/validate.py
    "WHILE": Operands((0, None), (0, None)),
    "IF": Operands((1, None), (0, None)),
    "CALL_ONCE": Operands((0, 0), (0, 0)),
    "VAR_HANDLE": Operands((0, 0)),
    "READ_VARIABLE": Operands((1, 1)),
    "ASSIGN_VARIABLE": Operands((2, 2), (0, 0)),
    # MediaPipe custom ops (mediapipe/util/tflite/operations/*.cc)
    "Convolution2DTransposeBias": Operands((3, 3), bias=2),
    "Landmarks2TransformMatrix": Operands((1, 1)),
    "TransformLandmarks": Operands((2, 2)),
    "TransformTensorBilinear": Operands((2, 2)),
    "MaxPoolingWithArgmax2D": Operands((1, 1), (2, 2)),
    "MaxUnpooling2D": Operands((2, 2)),
}
# Ops whose LiteRT kernels refuse int8, uint8 and int16 inputs alike (float, int32/int64 or bool
# only; audited with ai-edge-litert 2.3, tests/ops/test_int8_codes.py checks each refusal): no
# model LiteRT runs feeds them quantized tensors (``gpulite ops`` marks their int8 columns n/a).
LITERT_FLOAT_ONLY = frozenset({
    Op.FLOOR, Op.CEIL, Op.ROUND, Op.SIN, Op.COS, Op.SQUARE, Op.SIGN, Op.ZEROS_LIKE, Op.POW, Op.ADD_N, Op.ATAN2,
    Op.CUMSUM, Op.SEGMENT_SUM, Op.UNSORTED_SEGMENT_SUM, Op.UNSORTED_SEGMENT_PROD, Op.UNSORTED_SEGMENT_MAX,
    Op.UNSORTED_SEGMENT_MIN, Op.BUCKETIZE, Op.LOCAL_RESPONSE_NORMALIZATION, Op.L2_POOL_2D, Op.CONV_3D,
    Op.CONV_3D_TRANSPOSE, Op.REDUCE_ANY, Op.REDUCE_ALL, Op.RFFT2D, Op.NON_MAX_SUPPRESSION_V4,
    Op.NON_MAX_SUPPRESSION_V5, Op.MULTINOMIAL, Op.RANDOM_UNIFORM, Op.RANDOM_STANDARD_NORMAL})
_OPERANDS.update({op.value: dataclasses.replace(_OPERANDS[op.value], quant_refused=("int8", "uint8", "int16"))
                  for op in LITERT_FLOAT_ONLY})

_CUSTOM = int(sg.BuiltinOperator.CUSTOM)
_CUSTOM_SPECS = {
    Op.Convolution2DTransposeBias: OpSpec(_CUSTOM, co.TransposeConvBiasOptions,
                                          co.decode_transpose_conv_bias),
    Op.Landmarks2TransformMatrix: OpSpec(_CUSTOM, co.Landmarks2TransformMatrixOptions,
                                         co.decode_landmarks_to_transform_matrix, (2,)),
    Op.TransformTensorBilinear: OpSpec(_CUSTOM, co.TransformTensorBilinearOptions,
                                       co.decode_transform_tensor_bilinear, (2,)),
    Op.TransformLandmarks: OpSpec(_CUSTOM, co.TransformLandmarksOptions,
                                  co.decode_transform_landmarks),
    # MediaPipe's pooling-with-indices pair: known names, no kernel and no decoder yet.
    Op.MaxPoolingWithArgmax2D: OpSpec(_CUSTOM),
    Op.MaxUnpooling2D: OpSpec(_CUSTOM),
    Op.TFLite_Detection_PostProcess: OpSpec(_CUSTOM, co.DetectionPostProcessOptions,
                                            co.decode_detection_postprocess),
}
_SPECS: dict[Op, OpSpec] = {
    **{Op(name): OpSpec(int(code), _builtin_options(name), operands=_OPERANDS.get(name))
       for name, code in sg.BuiltinOperator.__members__.items()},
    **{op: dataclasses.replace(spec, operands=_OPERANDS.get(op.value)) for op, spec in _CUSTOM_SPECS.items()},
}
_DECLARED: dict[str, OpSpec] = {}  # the user's custom ops (declare_custom_op)


def declare_custom_op(name: str, decode: CustomDecoder | None = None) -> CustomOp:
    """Declare a custom op of the user's own, so that kernels can be registered for it.

    Parameters
    ----------
    name : str
        The op's custom code, as the model's ``OperatorCode.custom_code`` spells it.
    decode : callable, optional
        ``decode(custom_options: bytes | None) -> object``: run once per node when a model is
        loaded (declare the op before loading); its result is ``node.options``. It should raise
        :class:`~gpulite.errors.ModelError` for a malformed blob. Without it ``node.options`` is
        None and the kernel reads the raw bytes from ``node.custom_options``.

    Returns
    -------
    CustomOp
        The name, to pass to :func:`gpulite.register_kernel`.

    Raises
    ------
    ValueError
        ``name`` is empty, names a builtin operator or a MediaPipe op gpulite already defines,
        or was declared before with another decoder.
    """
    if not isinstance(name, str) or not name:
        raise ValueError(f"a custom op name must be a non-empty string, got {name!r}")
    if name in Op._value2member_map_:
        raise ValueError(f"{name!r} is already an op gpulite defines (Op.{name}); register kernels for it directly")
    spec = OpSpec(_CUSTOM, None, decode)
    if _DECLARED.get(name, spec) != spec:
        raise ValueError(f"custom op {name!r} is already declared with another decoder")
    _DECLARED[name] = spec
    return CustomOp(name)


def op_of(name: str) -> OpName:
    """The :class:`Op` called ``name``, or a :class:`CustomOp` for any other name (the reader's
    view of a custom code: any name is representable)."""
    member = Op._value2member_map_.get(name)
    return member if isinstance(member, Op) else CustomOp(name)


def op_named(name: str) -> OpName:
    """The op called ``name``, checked: an :class:`Op` or a declared custom op.

    Raises
    ------
    ValueError
        ``name`` is neither, with the closest known names as a suggestion.
    """
    member = Op._value2member_map_.get(name) if isinstance(name, str) else None
    if isinstance(member, Op):
        return member
    if isinstance(name, str) and name in _DECLARED:
        return CustomOp(name)
    known = {n.lower(): n for n in (*Op._value2member_map_, *_DECLARED)}
    close = [known[m] for m in difflib.get_close_matches(str(name).lower(), known, n=3, cutoff=0.6)]
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    raise ValueError(f"unknown op {brief(name)}: expected a TFLite builtin operator name (e.g. 'CONV_2D'), a MediaPipe "
                     f"custom op gpulite knows, or a custom op declared with gpulite.declare_custom_op{hint}")


def op_spec(op: str) -> OpSpec | None:
    """The facts of ``op`` (an :class:`Op` or a declared custom op), None for an unknown name."""
    member = Op._value2member_map_.get(op)
    return member.spec if isinstance(member, Op) else _DECLARED.get(op)


def decode_custom_options(op: str, version: int, data: bytes | None) -> Any:
    """``node.options`` of custom op ``op`` at ``version``: its decoded ``custom_options``.

    None when gpulite has no decoder for that op and version (an unknown custom op, or a
    version the op's kernels refuse). A malformed blob raises the decoder's
    :class:`~gpulite.errors.ModelError`.
    """
    spec = op_spec(op)
    if spec is None or spec.decode is None:
        return None
    if spec.decode_versions is not None and version not in spec.decode_versions:
        return None
    return spec.decode(data)


# -- fused activations ------------------------------------------------------------------------
class FusedActivation(StrEnum):
    """A node's fused activation, as the schema's ``ActivationFunctionType`` names it.

    ``NONE`` is falsy, every other member truthy, so ``if node.activation:`` asks whether
    there is one. The clamp ranges below are the only definition of them in gpulite.
    """

    NONE = "NONE"
    RELU = "RELU"
    RELU_N1_TO_1 = "RELU_N1_TO_1"
    RELU6 = "RELU6"
    TANH = "TANH"
    SIGN_BIT = "SIGN_BIT"

    def __bool__(self) -> bool:
        return self is not FusedActivation.NONE

    @property
    def code(self) -> int:
        """The schema's ``ActivationFunctionType`` code."""
        return int(sg.ActivationFunctionType[self.name])

    @classmethod
    def from_code(cls, code: int) -> FusedActivation:
        """The activation with schema code ``code``; an unknown code is NONE, as LiteRT's
        ``ConvertActivation`` makes it."""
        name = sg.ActivationFunctionType(code).name if code in sg.ActivationFunctionType._value2member_map_ else "NONE"
        return cls(name)

    @classmethod
    def of_options(cls, options: object) -> FusedActivation:
        """The fused activation an operator's builtin options carry (NONE for options without one)."""
        return cls.from_code(getattr(options, "fused_activation_function", 0))

    @classmethod
    def of_op(cls, op: str) -> FusedActivation | None:
        """The clamp a standalone op computes (RELU, RELU6, RELU_N1_TO_1), or None: such an op
        can be fused into its producer as this activation."""
        act = cls._value2member_map_.get(op)
        return act if isinstance(act, FusedActivation) and act.clamp is not None else None

    @property
    def clamp(self) -> tuple[float, float] | None:
        """``(lo, hi)`` as TFLite's ``CalculateActivationRange`` makes it; None for NONE,
        TANH and SIGN_BIT, for which it is unbounded (LiteRT's kernels ignore a fused TANH
        or SIGN_BIT, so gpulite's do too)."""
        return _CLAMPS.get(self.name)

    def bounds(self, dtype: np.dtype | type) -> tuple[Any, Any] | None:
        """:attr:`clamp` as two scalars of ``dtype`` (an open upper end is ``inf`` for a float
        dtype, the dtype's maximum for an integer one), or None when there is no clamp.
        Scalars of the array's dtype keep ``np.clip`` on its SIMD loop."""
        rng = self.clamp
        if rng is None:
            return None
        dt = np.dtype(dtype)
        lo, hi = rng
        if math.isinf(hi) and dt.kind != "f":
            hi = np.iinfo(dt).max
        return dt.type(lo), dt.type(hi)

    def quantized_bounds(self, scale: float, zero_point: int, dtype: np.dtype | type) -> tuple[int, int]:
        """TFLite's ``CalculateActivationRangeQuantized`` for an int8/uint8/int16 output.

        Each bound is ``zero_point + round(bound / scale)`` with the division in float32
        and halves rounded away from zero (``TfLiteRound``), clipped to the dtype's range;
        an activation without :attr:`clamp` gives the whole range.
        """
        info = np.iinfo(np.dtype(dtype))
        qmin, qmax = int(info.min), int(info.max)
        rng = self.clamp
        if rng is None:
            return qmin, qmax
        lo, hi = rng

        def q(v: float) -> int:
            x = float(np.float32(v) / np.float32(scale))
            return zero_point + math.floor(abs(x) + 0.5) * (1 if x >= 0 else -1)
        return max(qmin, q(lo)), qmax if math.isinf(hi) else min(qmax, q(hi))


_CLAMPS = {"RELU": (0.0, math.inf), "RELU_N1_TO_1": (-1.0, 1.0), "RELU6": (0.0, 6.0)}
