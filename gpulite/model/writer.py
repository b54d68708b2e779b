"""Write .tflite models: single ops and short chains for tests, and graph partitions for the
``litert`` backend (:mod:`gpulite.backends.litert`).

The FlatBuffer is built with ``flatbuffers.Builder``; every table is written field by field
from the slots of TFLite's schema (the options tables from :data:`gpulite.model.schema_gen.OPTIONS_FIELDS`,
the core tables from :data:`SLOTS` below), in the order and with the defaults of the official
generated builder functions, so a model written here is byte for byte what those would
write, without needing ai-edge-litert's schema module at run time. Example::

    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 3), np.float32)
    w = mb.const("w", np.ones((4, 3, 3, 3), np.float32))
    b = mb.const("b", np.zeros(4, np.float32))
    y = mb.tensor("y", (1, 8, 8, 4), np.float32)
    mb.op("CONV_2D", [x, w, b], [y], padding="SAME", stride_w=1, stride_h=1,
          fused_activation_function="RELU6")
    mb.output(y)
    model_bytes = mb.build()

Operator options are given as keyword arguments named like the fields of the
:mod:`gpulite.model.schema_gen` dataclasses; the options table is chosen from the op.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import flatbuffers
import numpy as np

from gpulite.model import schema_gen as sg
from gpulite.model.opdefs import Op

__all__ = ["OP_OPTIONS", "ModelBuilder", "Quant", "sparsify"]


# --- the core tables: name -> (number of slots, {field: (slot, wire kind, default)}) ------------
# From TFLite's schema.fbs (the vtable slot is the field's position); "off" is a child offset.
SLOTS: dict[str, tuple[int, dict[str, tuple[int, str, Any]]]] = {
    "Buffer": (3, {"data": (0, "off", 0), "offset": (1, "u64", 0), "size": (2, "u64", 0)}),
    "OperatorCode": (4, {"deprecated_builtin_code": (0, "i8", 0), "custom_code": (1, "off", 0),
                         "version": (2, "i32", 1), "builtin_code": (3, "i32", 0)}),
    "Tensor": (11, {"shape": (0, "off", 0), "type": (1, "i8", 0), "buffer": (2, "u32", 0), "name": (3, "off", 0),
                    "quantization": (4, "off", 0), "is_variable": (5, "bool", 0), "sparsity": (6, "off", 0),
                    "shape_signature": (7, "off", 0), "has_rank": (8, "bool", 0)}),
    "QuantizationParameters": (7, {"min": (0, "off", 0), "max": (1, "off", 0), "scale": (2, "off", 0),
                                   "zero_point": (3, "off", 0), "quantized_dimension": (6, "i32", 0)}),
    "SparsityParameters": (3, {"traversal_order": (0, "off", 0), "block_map": (1, "off", 0),
                               "dim_metadata": (2, "off", 0)}),
    "DimensionMetadata": (6, {"format": (0, "i8", 0), "dense_size": (1, "i32", 0),
                              "array_segments_type": (2, "u8", 0), "array_segments": (3, "off", 0),
                              "array_indices_type": (4, "u8", 0), "array_indices": (5, "off", 0)}),
    "Int32Vector": (1, {"values": (0, "off", 0)}),
    "Uint16Vector": (1, {"values": (0, "off", 0)}),
    "Uint8Vector": (1, {"values": (0, "off", 0)}),
    "Operator": (14, {"opcode_index": (0, "u32", 0), "inputs": (1, "off", 0), "outputs": (2, "off", 0),
                      "builtin_options_type": (3, "u8", 0), "builtin_options": (4, "off", 0),
                      "custom_options": (5, "off", 0), "custom_options_format": (6, "i8", 0),
                      "intermediates": (8, "off", 0), "builtin_options2_type": (11, "u8", 0),
                      "builtin_options2": (12, "off", 0)}),
    "SubGraph": (6, {"tensors": (0, "off", 0), "inputs": (1, "off", 0), "outputs": (2, "off", 0),
                     "operators": (3, "off", 0), "name": (4, "off", 0)}),
    "Metadata": (2, {"name": (0, "off", 0), "buffer": (1, "u32", 0)}),
    "TensorMap": (2, {"name": (0, "off", 0), "tensor_index": (1, "u32", 0)}),
    "SignatureDef": (5, {"inputs": (0, "off", 0), "outputs": (1, "off", 0), "signature_key": (2, "off", 0),
                         "subgraph_index": (4, "u32", 0)}),
    "Model": (10, {"version": (0, "u32", 0), "operator_codes": (1, "off", 0), "subgraphs": (2, "off", 0),
                  "description": (3, "off", 0), "buffers": (4, "off", 0), "metadata": (6, "off", 0),
                  "signature_defs": (7, "off", 0)}),
}

_PREPEND = {  # wire kind -> flatbuffers.Builder method
    "bool": "PrependBoolSlot", "i8": "PrependInt8Slot", "u8": "PrependUint8Slot", "i32": "PrependInt32Slot",
    "u32": "PrependUint32Slot", "i64": "PrependInt64Slot", "u64": "PrependUint64Slot",
    "f32": "PrependFloat32Slot", "f64": "PrependFloat64Slot", "off": "PrependUOffsetTRelativeSlot",
}


def _table(fb: flatbuffers.Builder, table: str, /, **values: Any) -> int:
    """Write one core table (:data:`SLOTS`); fields given as None are left out, the others are
    added in the order given (as the generated ``...Add...`` calls would add them)."""
    n, slots = SLOTS[table]
    fb.StartObject(n)
    for field_name, value in values.items():
        if value is not None:
            slot, kind, default = slots[field_name]
            getattr(fb, _PREPEND[kind])(slot, value, default)
    return fb.EndObject()


# --- which options table each builtin op carries (gpulite.model.opdefs: Op.X.spec.options) ------
#: Builtin op name -> (options table name, 1 for ``builtin_options`` or 2 for
#: ``builtin_options_2``). Ops absent here (LOGISTIC, TANH, RELU, PRELU, ...) have no options.
OP_OPTIONS: dict[str, tuple[str, int]] = {
    op.value: (op.spec.options.__name__, 1 if op.spec.options.__name__ in sg.BuiltinOptions.__members__ else 2)
    for op in Op if not op.is_custom and op.spec.options is not None
}

# Options fields whose integers are schema enums, so they may be given by member name.
_ENUM_FIELDS: dict[str, Any] = {  # field -> its IntEnum
    "padding": sg.Padding, "fused_activation_function": sg.ActivationFunctionType,
    "in_data_type": sg.TensorType, "out_data_type": sg.TensorType, "out_type": sg.TensorType,
    "output_type": sg.TensorType, "idx_out_type": sg.TensorType, "key_dtype": sg.TensorType,
    "value_dtype": sg.TensorType, "quantized_bias_type": sg.TensorType,
    "combiner": sg.CombinerType, "mode": sg.MirrorPadMode, "kernel_type": sg.LSTMKernelType,
    "weights_format": sg.FullyConnectedOptionsWeightsFormat, "type": sg.LSHProjectionType,
    "algorithm": sg.RngAlgorithm, "comparison_direction": sg.StablehloComparisonDirection,
    "compare_type": sg.StablehloComparisonType, "reduce_function": sg.ReduceWindowFunction,
    "precision_config": sg.StablehloPrecisionConfig, "composite_attributes_format": sg.CustomOptionsFormat,
}

_VEC_DTYPES = {
    "vec_i8": np.int8, "vec_u8": np.uint8, "vec_i16": np.int16, "vec_u16": np.uint16, "vec_i32": np.int32,
    "vec_u32": np.uint32, "vec_i64": np.int64, "vec_u64": np.uint64, "vec_f32": np.float32,
    "vec_f64": np.float64, "vec_bool": np.bool_,
}

# numpy dtype -> TensorType (object arrays are not written: STRING tensors need their own encoding).
_TENSOR_TYPES: dict[np.dtype, int] = {
    np.dtype(np.float32): sg.TensorType.FLOAT32, np.dtype(np.float16): sg.TensorType.FLOAT16,
    np.dtype(np.float64): sg.TensorType.FLOAT64, np.dtype(np.int8): sg.TensorType.INT8,
    np.dtype(np.uint8): sg.TensorType.UINT8, np.dtype(np.int16): sg.TensorType.INT16,
    np.dtype(np.uint16): sg.TensorType.UINT16, np.dtype(np.int32): sg.TensorType.INT32,
    np.dtype(np.uint32): sg.TensorType.UINT32, np.dtype(np.int64): sg.TensorType.INT64,
    np.dtype(np.uint64): sg.TensorType.UINT64, np.dtype(np.bool_): sg.TensorType.BOOL,
    np.dtype(np.complex64): sg.TensorType.COMPLEX64, np.dtype(np.complex128): sg.TensorType.COMPLEX128,
}

_BUFFER_ALIGN = 16  # constant data is 16-byte aligned, as the TFLite converter writes it


@dataclass(frozen=True)
class Quant:
    """Affine quantization ``real = scale * (q - zero_point)`` of one tensor.

    Parameters
    ----------
    scale : float or array_like
        One scale (per-tensor) or one per channel along ``axis``.
    zero_point : int or array_like
        One zero point, or one per scale; a single value is repeated for every scale.
    axis : int
        The quantized dimension of a per-channel tensor.
    min, max : array_like, optional
        Calibration ranges, written as ``QuantizationParameters.min``/``max``.
    """

    scale: Any
    zero_point: Any = 0
    axis: int = 0
    min: Any = None
    max: Any = None

    def __post_init__(self) -> None:
        scale = np.atleast_1d(np.asarray(self.scale, np.float32)).reshape(-1)
        zp = np.atleast_1d(np.asarray(self.zero_point, np.int64)).reshape(-1)
        if zp.size == 1 and scale.size > 1:
            zp = np.repeat(zp, scale.size)
        if zp.size != scale.size:
            raise ValueError(f"Quant: {scale.size} scales need 1 or {scale.size} zero points, got {zp.size}")
        object.__setattr__(self, "scale", scale)
        object.__setattr__(self, "zero_point", zp)
        for name in ("min", "max"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, np.atleast_1d(np.asarray(v, np.float32)).reshape(-1))


@dataclass
class _Tensor:
    name: str
    shape: tuple[int, ...]
    type_code: int
    buffer: int = 0
    quant: Quant | None = None
    shape_signature: tuple[int, ...] | None = None
    sparsity: dict | None = None
    is_variable: bool = False


@dataclass
class _Op:
    opcode: int
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    options_table: str | None = None
    options_union: int = 1
    options: dict[str, Any] = field(default_factory=dict)
    custom_options: bytes | None = None
    intermediates: tuple[int, ...] = ()


def _type_code(dtype: Any) -> int:
    """A TensorType from a numpy dtype, a TensorType member or its name (``"INT4"``)."""
    if isinstance(dtype, sg.TensorType):
        return int(dtype)
    if isinstance(dtype, str) and dtype in sg.TensorType.__members__:
        return int(sg.TensorType[dtype])
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise TypeError(f"expected a numpy dtype or TensorType name, got {dtype!r}") from None
    if dt.newbyteorder("<") not in _TENSOR_TYPES:
        raise TypeError(f"numpy dtype {dt} has no TFLite TensorType; expected one of {sorted(map(str, _TENSOR_TYPES))}")
    return int(_TENSOR_TYPES[dt.newbyteorder("<")])


def _as_quant(q: Quant | tuple | None) -> Quant | None:
    if q is None or isinstance(q, Quant):
        return q
    if isinstance(q, tuple) and len(q) == 2:
        return Quant(scale=q[0], zero_point=q[1])
    raise TypeError(f"quant must be None, (scale, zero_point) or Quant(...), got {q!r}")


def _shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    out = tuple(int(d) for d in shape)
    if any(d < -1 for d in out):
        raise ValueError(f"{what}: dimensions must be >= -1, got {list(out)}")
    return out


def _align(n: int, a: int = _BUFFER_ALIGN) -> int:
    return (n + a - 1) // a * a


class ModelBuilder:
    """Collects tensors, operators and buffers of a model; :meth:`build` writes it.

    Every method that makes a tensor returns its index, to be used in :meth:`op`,
    :meth:`output` and signatures. Graph inputs are in the order of :meth:`input` calls.
    The builder is subgraph 0; :meth:`subgraph` adds more (for WHILE, IF, CALL_ONCE).
    """

    def __init__(self, name: str = "main") -> None:
        self.name = name
        self._tensors: list[_Tensor] = []
        self._buffers: list[bytes] = [b""]  # buffer 0: the empty sentinel every non-constant uses
        self._const_buffers: list[int] = []  # buffers that build(buffers_by_offset=True) moves out
        self._opcodes: dict[tuple[int, str, int], int] = {}
        self._ops: list[_Op] = []
        self._inputs: list[int] = []
        self._outputs: list[int] = []
        self._metadata: list[tuple[str, int]] = []
        self._subgraphs: list[ModelBuilder] = []

    def subgraph(self, name: str) -> ModelBuilder:
        """Add a subgraph to the model and return its builder; its index in the model is 1 for the
        first one added, 2 for the next, ... Its tensors, operators, inputs and outputs are its
        own; buffers and operator codes are the model's. Only this (the model's) builder builds."""
        child = ModelBuilder(name)
        child._buffers, child._const_buffers, child._opcodes = self._buffers, self._const_buffers, self._opcodes
        self._subgraphs.append(child)
        return child

    # -- tensors ---------------------------------------------------------------------------
    def tensor(
        self, name: str, shape: Sequence[int], dtype: Any, *, quant: Quant | tuple | None = None,
        shape_signature: Sequence[int] | None = None, is_variable: bool = False,
    ) -> int:
        """Add a non-constant tensor (an intermediate or an output); returns its index.

        Parameters
        ----------
        name : str
        shape : sequence of int
        dtype : numpy dtype, TensorType or TensorType name
        quant : (scale, zero_point) or Quant, optional
        shape_signature : sequence of int, optional
            The shape with -1 for dynamic dimensions.
        is_variable : bool
            Mark the tensor as a variable (state kept across invokes).
        """
        t = _Tensor(
            name, _shape(shape, f"tensor {name!r} shape"), _type_code(dtype), 0, _as_quant(quant),
            None if shape_signature is None else _shape(shape_signature, f"tensor {name!r} shape_signature"),
            None, is_variable,
        )
        self._tensors.append(t)
        return len(self._tensors) - 1

    def input(
        self, name: str, shape: Sequence[int], dtype: Any, *, quant: Quant | tuple | None = None,
        shape_signature: Sequence[int] | None = None,
    ) -> int:
        """Add a graph input (inputs are ordered by these calls); returns its index."""
        i = self.tensor(name, shape, dtype, quant=quant, shape_signature=shape_signature)
        self._inputs.append(i)
        return i

    def const(
        self, name: str, data: Any, *, quant: Quant | tuple | None = None, sparsity: Mapping | None = None,
        shape: Sequence[int] | None = None, dtype: Any = None, is_variable: bool = False,
    ) -> int:
        """Add a constant tensor with its own buffer; returns its index.

        Parameters
        ----------
        name : str
        data : array_like
            The values. Without ``sparsity`` the tensor's shape is ``data.shape``.
        quant : (scale, zero_point) or Quant, optional
        sparsity : dict, optional
            ``{"traversal_order": [...], "block_map": [...], "dim_metadata": [{"format":
            "DENSE" | "SPARSE_CSR", "dense_size": n, "array_segments": [...],
            "array_indices": [...]}, ...]}``; ``data`` is then the stored values and
            ``shape`` the dense shape (see :func:`sparsify`). Segment/index arrays of
            dtype uint8 or uint16 are written as Uint8Vector/Uint16Vector, others as Int32Vector.
        shape : sequence of int, optional
            Required with ``sparsity``; otherwise must equal ``data.shape`` if given.
        dtype : TensorType or its name, optional
            Write ``data``'s raw bytes under another tensor type (e.g. ``"INT4"`` packed
            nibbles); ``shape`` is then required.
        is_variable : bool
            Mark the tensor as a variable whose buffer holds its initial value.
        """
        arr = np.array(data, order="C")  # not ascontiguousarray, which makes a scalar 1-D
        if arr.dtype.kind in "OUS":
            raise TypeError(f"const {name!r}: string/object data is not supported, got dtype {arr.dtype}")
        arr = arr.astype(arr.dtype.newbyteorder("<"), copy=False)  # TFLite buffers are little-endian
        type_code = _type_code(arr.dtype if dtype is None else dtype)
        if sparsity is not None or dtype is not None:
            if shape is None:
                raise ValueError(f"const {name!r}: sparse or re-typed constants need shape= (the dense shape)")
            tshape = _shape(shape, f"const {name!r} shape")
        else:
            tshape = arr.shape
            if shape is not None and _shape(shape, f"const {name!r} shape") != tshape:
                raise ValueError(f"const {name!r}: shape {list(shape)} does not match data shape {list(tshape)}")
        self._buffers.append(arr.tobytes())
        b = len(self._buffers) - 1
        self._const_buffers.append(b)
        self._tensors.append(_Tensor(name, tshape, type_code, b, _as_quant(quant), None,
                                     None if sparsity is None else dict(sparsity), is_variable))
        return len(self._tensors) - 1

    def output(self, *tensors: int) -> None:
        """Append graph outputs, in order."""
        for t in tensors:
            self._check_index(t, "output", allow_omitted=False)
            self._outputs.append(t)

    def metadata(self, name: str, data: bytes) -> None:
        """Add a model metadata entry ``name`` whose buffer holds ``data``."""
        self._buffers.append(bytes(data))
        self._metadata.append((name, len(self._buffers) - 1))

    # -- operators -------------------------------------------------------------------------
    def op(
        self, op: str | int, inputs: Sequence[int], outputs: Sequence[int], *, op_version: int = 1,
        intermediates: Sequence[int] = (), **options: Any,
    ) -> None:
        """Add a builtin operator.

        Parameters
        ----------
        op : str or int
            A ``BuiltinOperator`` name (``"CONV_2D"``) or code.
        inputs, outputs : sequence of int
            Tensor indices; -1 in ``inputs`` is an omitted optional input.
        op_version : int
            The operator code's version.
        intermediates : sequence of int
            ``Operator.intermediates`` (used by quantized LSTMs).
        **options
            Fields of the op's options table (``gpulite.model.schema_gen`` names).
            Enum fields take member names or ints, vector fields take sequences.
        """
        if isinstance(op, str):
            if op not in sg.BuiltinOperator.__members__:
                raise ValueError(f"unknown builtin op {op!r}; expected a BuiltinOperator name such as 'CONV_2D'")
            code = int(sg.BuiltinOperator[op])
        else:
            code = int(op)
            if code not in sg.BuiltinOperator._value2member_map_:
                raise ValueError(f"unknown builtin op code {code}")
            op = sg.BuiltinOperator(code).name
        if code == sg.BuiltinOperator.CUSTOM:
            raise ValueError("use custom_op(...) for CUSTOM operators")
        table, union = OP_OPTIONS.get(op, (None, 1))
        if table is None and options:
            raise TypeError(f"op {op} has no options table, but options {sorted(options)} were given")
        if table is not None:
            fields = {f[0] for f in sg.OPTIONS_FIELDS[table]}
            unknown = sorted(set(options) - fields)
            if unknown:
                raise TypeError(f"op {op} ({table}) has no option(s) {unknown}; its fields are {sorted(fields)}")
            options = _normalize_options(table, options)
        self._add_op(_Op(self._opcode(code, "", op_version), *self._io(inputs, outputs), table, union,
                         dict(options), None, tuple(intermediates)))

    def custom_op(
        self, custom_code: str, inputs: Sequence[int], outputs: Sequence[int], *,
        custom_options: bytes = b"", op_version: int = 1,
    ) -> None:
        """Add a CUSTOM operator with raw ``custom_options`` bytes (usually a FlexBuffer)."""
        if not custom_code:
            raise ValueError("custom_op needs a non-empty custom_code")
        self._add_op(_Op(self._opcode(int(sg.BuiltinOperator.CUSTOM), custom_code, op_version),
                         *self._io(inputs, outputs), custom_options=bytes(custom_options)))

    def _opcode(self, code: int, custom: str, version: int) -> int:
        return self._opcodes.setdefault((code, custom, int(version)), len(self._opcodes))

    def _io(self, inputs: Sequence[int], outputs: Sequence[int]) -> tuple[tuple[int, ...], tuple[int, ...]]:
        for t in inputs:
            self._check_index(t, "op input", allow_omitted=True)
        for t in outputs:
            self._check_index(t, "op output", allow_omitted=False)
        return tuple(int(t) for t in inputs), tuple(int(t) for t in outputs)

    def _add_op(self, op: _Op) -> None:
        for t in op.intermediates:
            self._check_index(t, "op intermediate", allow_omitted=False)
        self._ops.append(op)

    def _check_index(self, t: int, what: str, allow_omitted: bool) -> None:
        low = -1 if allow_omitted else 0
        if not isinstance(t, (int, np.integer)) or not low <= t < len(self._tensors):
            raise IndexError(
                f"{what}: tensor index {t!r} is not one of this builder's tensors [0, {len(self._tensors)})"
            )

    # -- writing ---------------------------------------------------------------------------
    def build(
        self, signature: tuple[str, Mapping[str, int], Mapping[str, int]] | None = None, *,
        buffers_by_offset: bool = False, description: str = "gpulite.testing.tflite_writer",
    ) -> bytes:
        """Write the model and return the .tflite file's bytes.

        Parameters
        ----------
        signature : (key, {name: tensor}, {name: tensor}), optional
            Add one SignatureDef for the subgraph.
        buffers_by_offset : bool
            Store constant tensor buffers after the FlatBuffer, each 16-byte aligned, named
            by ``Buffer.offset``/``size`` (offsets from the start of the file), as LiteRT
            writes models over 2 GB. Metadata buffers stay inside the FlatBuffer.
        description : str
            ``Model.description``.
        """
        if not buffers_by_offset:
            return self._flatbuffer(signature, description, {})
        moved = [b for b in self._const_buffers if self._buffers[b]]
        # Offsets are only known once the FlatBuffer's size is; the size does not depend on the
        # offset values (u64 fields, written whenever non-zero), so build once with
        # placeholders to measure it, then again with the real offsets.
        probe = self._flatbuffer(signature, description, {b: (1 << 40, 1 << 40) for b in moved})
        where, end = {}, _align(len(probe))
        for b in moved:
            where[b] = (end, len(self._buffers[b]))
            end = _align(end + len(self._buffers[b]))
        out = bytearray(self._flatbuffer(signature, description, where))
        if len(out) != len(probe):
            raise AssertionError(f"FlatBuffer size changed between passes ({len(probe)} -> {len(out)})")
        for b in moved:
            out += b"\0" * (where[b][0] - len(out))
            out += self._buffers[b]
        return bytes(out)

    def _flatbuffer(self, signature, description: str, by_offset: dict[int, tuple[int, int]]) -> bytes:
        fb = flatbuffers.Builder(1024)

        buffers = []
        for i, data in enumerate(self._buffers):
            vec = _aligned_bytes(fb, data) if data and i not in by_offset else None
            where = by_offset.get(i, (None, None))
            buffers.append(_table(fb, "Buffer", data=vec, offset=where[0], size=where[1]))

        opcodes = []
        for (code, custom, version) in self._opcodes:
            name = fb.CreateString(custom) if custom else None
            # deprecated_builtin_code is an int8: codes past 127 store the placeholder there.
            opcodes.append(_table(
                fb, "OperatorCode",
                deprecated_builtin_code=min(code, sg.BuiltinOperator.PLACEHOLDER_FOR_GREATER_OP_CODES),
                builtin_code=code, custom_code=name, version=version))

        subgraphs = [b._write_subgraph(fb) for b in (self, *self._subgraphs)]

        metadata = []
        for name, b in self._metadata:
            n = fb.CreateString(name)
            metadata.append(_table(fb, "Metadata", name=n, buffer=b))

        sigs = [] if signature is None else [self._write_signature(fb, signature)]
        desc = fb.CreateString(description)
        codes_vec, sg_vec = _table_vector(fb, opcodes), _table_vector(fb, subgraphs)
        buf_vec = _table_vector(fb, buffers)
        meta_vec = _table_vector(fb, metadata) if metadata else None
        sig_vec = _table_vector(fb, sigs) if sigs else None
        model = _table(fb, "Model", version=3, operator_codes=codes_vec, subgraphs=sg_vec, description=desc,
                       buffers=buf_vec, metadata=meta_vec, signature_defs=sig_vec)
        fb.Finish(model, file_identifier=b"TFL3")
        return bytes(fb.Output())

    def _write_subgraph(self, fb: flatbuffers.Builder) -> int:
        tensors = [self._write_tensor(fb, t) for t in self._tensors]
        operators = [self._write_op(fb, op) for op in self._ops]
        sg_name = fb.CreateString(self.name)
        t_vec, o_vec = _table_vector(fb, tensors), _table_vector(fb, operators)
        in_vec, out_vec = _ints(fb, self._inputs), _ints(fb, self._outputs)
        return _table(fb, "SubGraph", tensors=t_vec, inputs=in_vec, outputs=out_vec, operators=o_vec, name=sg_name)

    def _write_tensor(self, fb: flatbuffers.Builder, t: _Tensor) -> int:
        shape = _ints(fb, t.shape)
        sig = None if t.shape_signature is None else _ints(fb, t.shape_signature)
        name = fb.CreateString(t.name)
        quant = None if t.quant is None else _write_quant(fb, t.quant)
        sparsity = None if t.sparsity is None else _write_sparsity(fb, t.sparsity, t.name)
        return _table(fb, "Tensor", shape=shape, type=t.type_code, buffer=t.buffer, name=name, quantization=quant,
                      is_variable=True if t.is_variable else None, sparsity=sparsity, shape_signature=sig,
                      has_rank=True)

    def _write_op(self, fb: flatbuffers.Builder, op: _Op) -> int:
        options = None if op.options_table is None else _write_options(fb, op.options_table, op.options)
        ins, outs = _ints(fb, op.inputs), _ints(fb, op.outputs)
        inter = _ints(fb, op.intermediates) if op.intermediates else None
        custom = fb.CreateByteVector(op.custom_options) if op.custom_options is not None else None
        opts: dict[str, Any] = {}
        if options is not None:
            union: Any = sg.BuiltinOptions if op.options_union == 1 else sg.BuiltinOptions2
            type_index = int(union[op.options_table])
            key = "builtin_options" if op.options_union == 1 else "builtin_options2"
            opts = {key + "_type": type_index, key: options}
        return _table(fb, "Operator", opcode_index=op.opcode, inputs=ins, outputs=outs, **opts, custom_options=custom,
                      custom_options_format=None if custom is None else sg.CustomOptionsFormat.FLEXBUFFERS,
                      intermediates=inter)

    def _write_signature(self, fb: flatbuffers.Builder, signature) -> int:
        try:
            key, ins, outs = signature
        except (TypeError, ValueError):
            raise TypeError(f"signature must be (key, {{name: tensor}}, {{name: tensor}}), got {signature!r}") from None

        def tmap(m: Mapping[str, int], what: str) -> int:
            maps = []
            for name, t in m.items():
                self._check_index(t, f"signature {key!r} {what} {name!r}", allow_omitted=False)
                n = fb.CreateString(name)
                maps.append(_table(fb, "TensorMap", name=n, tensor_index=int(t)))
            return _table_vector(fb, maps)

        in_vec, out_vec, k = tmap(ins, "input"), tmap(outs, "output"), fb.CreateString(key)
        return _table(fb, "SignatureDef", inputs=in_vec, outputs=out_vec, signature_key=k, subgraph_index=0)

# --- FlatBuffer pieces ------------------------------------------------------------------------
def _ints(fb: flatbuffers.Builder, values: Sequence[int]) -> int:
    return fb.CreateNumpyVector(np.asarray(values, np.int32).reshape(-1))


def _table_vector(fb: flatbuffers.Builder, offsets: Sequence[int]) -> int:
    fb.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        fb.PrependUOffsetTRelative(off)
    return fb.EndVector()


def _aligned_bytes(fb: flatbuffers.Builder, data: bytes) -> int:
    """A ubyte vector whose first byte sits at a 16-byte boundary of the file."""
    fb.StartVector(1, len(data), _BUFFER_ALIGN)
    fb.head -= len(data)
    fb.Bytes[fb.head : fb.head + len(data)] = data
    return fb.EndVector()


def _write_quant(fb: flatbuffers.Builder, q: Quant) -> int:
    qmin = None if q.min is None else fb.CreateNumpyVector(q.min)
    qmax = None if q.max is None else fb.CreateNumpyVector(q.max)
    scale, zp = fb.CreateNumpyVector(q.scale), fb.CreateNumpyVector(q.zero_point)
    return _table(fb, "QuantizationParameters", min=qmin, max=qmax, scale=scale, zero_point=zp,
                  quantized_dimension=int(q.axis))


_INDEX_VECTORS = {  # numpy dtype -> (SparseIndexVector member, schema table)
    np.dtype(np.uint8): (sg.SparseIndexVector.Uint8Vector, "Uint8Vector"),
    np.dtype(np.uint16): (sg.SparseIndexVector.Uint16Vector, "Uint16Vector"),
}


def _index_vector(fb: flatbuffers.Builder, values: Any) -> tuple[int, int]:
    arr = np.asarray(values)
    kind, table = _INDEX_VECTORS.get(arr.dtype, (sg.SparseIndexVector.Int32Vector, "Int32Vector"))
    dtype = {"Uint8Vector": np.uint8, "Uint16Vector": np.uint16}.get(table, np.int32)
    vec = fb.CreateNumpyVector(arr.astype(dtype).reshape(-1))
    return int(kind), _table(fb, table, values=vec)


def _write_sparsity(fb: flatbuffers.Builder, sp: Mapping, name: str) -> int:
    unknown = set(sp) - {"traversal_order", "block_map", "dim_metadata"}
    if unknown:
        raise TypeError(f"const {name!r} sparsity: unknown keys {sorted(unknown)}; expected traversal_order, "
                        "block_map, dim_metadata")
    dims = []
    for level, d in enumerate(sp.get("dim_metadata", ())):
        fmt = d.get("format", "DENSE")
        fmt = int(sg.DimensionType[fmt]) if isinstance(fmt, str) else int(fmt)
        seg = (None, None) if d.get("array_segments") is None else _index_vector(fb, d["array_segments"])
        idx = (None, None) if d.get("array_indices") is None else _index_vector(fb, d["array_indices"])
        if fmt == sg.DimensionType.SPARSE_CSR and (seg[1] is None or idx[1] is None):
            raise ValueError(
                f"const {name!r} sparsity level {level}: SPARSE_CSR needs array_segments and array_indices"
            )
        dims.append(_table(fb, "DimensionMetadata", format=fmt, dense_size=int(d.get("dense_size", 0)),
                           array_segments_type=seg[0], array_segments=seg[1],
                           array_indices_type=idx[0], array_indices=idx[1]))
    order, bmap = _ints(fb, sp.get("traversal_order", ())), _ints(fb, sp.get("block_map", ()))
    dim_vec = _table_vector(fb, dims)
    return _table(fb, "SparsityParameters", traversal_order=order, block_map=bmap, dim_metadata=dim_vec)


def _enum_value(table: str, field_name: str, value: Any) -> int:
    enum = _ENUM_FIELDS.get(field_name)
    if isinstance(value, str):
        if enum is None or value not in enum.__members__:
            allowed = sorted(enum.__members__) if enum is not None else "an int (not an enum field)"
            raise ValueError(f"{table}.{field_name}: {value!r} is not a valid value; expected {allowed}")
        return int(enum[value])
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{table}.{field_name}: expected an int, got {value!r}")
    # Ints are not range-checked: tests write out-of-range enums on purpose (fuzzing, errors).
    return int(value)


def _normalize_options(table: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """Options as the values to write: enum names -> ints, vectors -> numpy arrays.

    Done when the op is added, so a bad option fails at the ``op(...)`` call that gave it.
    """
    spec = {f[0]: f[2] for f in sg.OPTIONS_FIELDS[table]}
    out: dict[str, Any] = {}
    for name, value in options.items():
        kind = spec[name]
        if kind.startswith("vec_"):
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                raise TypeError(f"{table}.{name}: expected a sequence, got {value!r}")
            vals = [_enum_value(table, name, v) if isinstance(v, str) else v for v in value]
            out[name] = np.asarray(vals, _VEC_DTYPES[kind]).reshape(-1)
        elif kind == "str":
            if not isinstance(value, str):
                raise TypeError(f"{table}.{name}: expected a str, got {value!r}")
            out[name] = value
        elif kind == "bool":
            out[name] = bool(value)
        elif kind in ("f32", "f64"):
            out[name] = float(value)
        else:
            out[name] = _enum_value(table, name, value)
    return out


def _write_options(fb: flatbuffers.Builder, table: str, options: Mapping[str, Any]) -> int:
    slots = {f[0]: (f[1], f[2], f[3]) for f in sg.OPTIONS_FIELDS[table]}
    # Vectors and strings are children: they must be written before the table starts.
    children: dict[str, int] = {}
    for name, value in options.items():
        if isinstance(value, np.ndarray):
            children[name] = fb.CreateNumpyVector(value)
        elif isinstance(value, str):
            children[name] = fb.CreateString(value)
    fb.StartObject(max((s for s, _, _ in slots.values()), default=-1) + 1)
    for name, value in options.items():
        slot, kind, default = slots[name]
        if name in children:
            fb.PrependUOffsetTRelativeSlot(slot, children[name], 0)
        else:
            getattr(fb, _PREPEND[kind])(slot, value, default)
    return fb.EndObject()


# --- sparse encoding --------------------------------------------------------------------------
def sparsify(
    dense: Any, formats: Sequence[str], *, block_shape: Sequence[int] | None = None,
    block_map: Sequence[int] | None = None, traversal_order: Sequence[int] | None = None,
) -> tuple[np.ndarray, dict]:
    """Encode a dense array in TFLite's sparse format (the inverse of DENSIFY).

    Parameters
    ----------
    dense : array_like
        The dense values; zeros are dropped where a level is SPARSE_CSR.
    formats : sequence of {"DENSE", "SPARSE_CSR"}
        One format per traversal level (rank + number of block dimensions).
    block_shape, block_map : sequence of int, optional
        Block sizes and the dense dimension each one splits (e.g. ``[4]`` and ``[1]`` for
        1x4 blocks of a matrix's columns). Every split dimension must divide evenly.
    traversal_order : sequence of int, optional
        Level order; defaults to ``0, 1, ..., rank + len(block_map) - 1``.

    Returns
    -------
    values : ndarray
        The stored values, for ``ModelBuilder.const(..., sparsity=..., shape=dense.shape)``.
    sparsity : dict
        The ``sparsity=`` argument.
    """
    dense = np.asarray(dense)
    rank = dense.ndim
    block_shape = tuple(block_shape or ())
    block_map = tuple(block_map or ())
    if len(block_shape) != len(block_map):
        raise ValueError(f"block_shape {list(block_shape)} and block_map {list(block_map)} differ in length")
    n_levels = rank + len(block_map)
    order = tuple(traversal_order) if traversal_order is not None else tuple(range(n_levels))
    if sorted(order) != list(range(n_levels)) or len(formats) != n_levels:
        raise ValueError(f"need {n_levels} formats and a permutation of range({n_levels}) as traversal_order, "
                         f"got {len(formats)} formats and {list(order)}")
    # Split blocked dims: "expanded" dims are the rank outer dims then the block dims.
    sizes = list(dense.shape)
    for b, dim in zip(block_shape, block_map, strict=False):
        if sizes[dim] % b:
            raise ValueError(f"dimension {dim} of size {dense.shape[dim]} is not a multiple of block {b}")
        sizes[dim] //= b
    sizes += list(block_shape)
    # Reshape to (outer0, blk0?, outer1, blk1?, ...) then move axes into expanded order.
    inter: list[int] = []
    axes_pos: dict[int, int] = {}
    for d in range(rank):
        axes_pos[d] = len(inter)
        inter.append(sizes[d])
        if d in block_map:
            k = block_map.index(d)
            axes_pos[rank + k] = len(inter)
            inter.append(block_shape[k])
    expanded = dense.reshape(inter).transpose([axes_pos[e] for e in range(n_levels)])
    walk = expanded.transpose(order)  # axes in traversal order
    dims: list[dict] = []
    # Level by level, keep the list of index prefixes that survive (as in FormatConverter).
    prefixes: list[tuple[int, ...]] = [()]
    for level in range(n_levels):
        size = walk.shape[level]
        if formats[level] == "DENSE":
            dims.append({"format": "DENSE", "dense_size": size})
            prefixes = [(*p, i) for p in prefixes for i in range(size)]
            continue
        if formats[level] != "SPARSE_CSR":
            raise ValueError(f"format of level {level} must be DENSE or SPARSE_CSR, got {formats[level]!r}")
        segments, indices, kept = [0], [], []  # type: list[int], list[int], list[tuple[int, ...]]
        for p in prefixes:
            sub = walk[p]  # the rest of the tensor under this prefix
            for i in range(size):
                if np.any(sub[i] != 0):
                    indices.append(i)
                    kept.append((*p, i))
            segments.append(len(indices))
        dims.append({"format": "SPARSE_CSR", "dense_size": 0,
                     "array_segments": np.asarray(segments, np.int32), "array_indices": np.asarray(indices, np.int32)})
        prefixes = kept
    values = np.asarray([walk[p] for p in prefixes], dense.dtype).reshape(-1) if prefixes else np.zeros(0, dense.dtype)
    if math.prod(walk.shape) == 0:
        values = np.zeros(0, dense.dtype)
    return values, {"traversal_order": list(order), "block_map": list(block_map), "dim_metadata": dims}
