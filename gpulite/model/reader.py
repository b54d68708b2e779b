"""Read a .tflite FlatBuffer into plain Python objects.

Everything a backend needs comes out as dataclasses and numpy arrays; nothing downstream
touches FlatBuffer tables. Constant buffers are zero-copy views into the file bytes
(including buffers stored after the FlatBuffer by offset/size, as large models do). Any
inconsistency raises :class:`~gpulite.errors.ModelError`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpulite.errors import ModelError, brief
from gpulite.model import schema_gen as sg
from gpulite.model.flatbuf import Buffer, Table
from gpulite.model.opdefs import Op, OpName, decode_custom_options, op_of

# TensorType -> numpy dtype (None: representable but not computable here).
DTYPES: dict[int, np.dtype] = {
    sg.TensorType.FLOAT32: np.dtype(np.float32), sg.TensorType.FLOAT16: np.dtype(np.float16),
    sg.TensorType.INT32: np.dtype(np.int32), sg.TensorType.UINT8: np.dtype(np.uint8),
    sg.TensorType.INT64: np.dtype(np.int64), sg.TensorType.STRING: np.dtype(np.object_),
    sg.TensorType.BOOL: np.dtype(np.bool_), sg.TensorType.INT16: np.dtype(np.int16),
    sg.TensorType.COMPLEX64: np.dtype(np.complex64), sg.TensorType.INT8: np.dtype(np.int8),
    sg.TensorType.FLOAT64: np.dtype(np.float64), sg.TensorType.COMPLEX128: np.dtype(np.complex128),
    sg.TensorType.UINT64: np.dtype(np.uint64), sg.TensorType.UINT32: np.dtype(np.uint32),
    sg.TensorType.UINT16: np.dtype(np.uint16),
}
INT32_MAX = (1 << 31) - 1  # LiteRT's dimensions are int32, and so is every element count here


def shape_problem(shape: tuple[int, ...]) -> str | None:
    """Why ``shape`` cannot be a tensor's dimensions, or None when it can.

    Each dimension must be in ``[0, 2**31 - 1]`` (LiteRT keeps them as int32 and refuses a
    negative one), and so must the element count with zero dimensions counted as 1: a shape
    such as ``(0, 2**31 - 1, 2**31 - 1)`` holds no elements, but no array can be made with it.
    """
    bad = [d for d in shape if not 0 <= d <= INT32_MAX]
    if bad:
        return f"dimension {bad[0]} is outside [0, {INT32_MAX}]"
    if math.prod(max(d, 1) for d in shape) > INT32_MAX:
        return f"its dimensions multiply to more than {INT32_MAX} elements"
    return None


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: ``real = scale * (q - zero_point)``; per-channel along ``axis``."""

    scale: np.ndarray  # float32, shape (1,) or (channels,)
    zero_point: np.ndarray  # int64, same length as scale
    axis: int = 0
    min: np.ndarray | None = None
    max: np.ndarray | None = None

    @property
    def per_channel(self) -> bool:
        return self.scale.size > 1


@dataclass(frozen=True)
class DimensionMetadata:
    format: int  # 0 DENSE, 1 SPARSE_CSR
    dense_size: int
    array_segments: np.ndarray | None
    array_indices: np.ndarray | None


@dataclass(frozen=True)
class Sparsity:
    traversal_order: tuple[int, ...]
    block_map: tuple[int, ...]
    dim_metadata: tuple[DimensionMetadata, ...]


@dataclass
class TensorDef:
    index: int
    name: str
    shape: tuple[int, ...]
    shape_signature: tuple[int, ...]
    dtype: np.dtype
    type_code: int
    buffer: int
    data: np.ndarray | None = None  # constant contents (zero-copy, read-only)
    quantization: Quantization | None = None
    sparsity: Sparsity | None = None
    is_variable: bool = False
    quant_min: np.ndarray | None = None
    quant_max: np.ndarray | None = None
    has_shape_signature: bool = False  # the file stores one (else shape_signature is the shape)

    @property
    def is_constant(self) -> bool:
        return self.data is not None


@dataclass
class OperatorDef:
    index: int
    op: OpName  # Op.CONV_2D, Op.TransformLandmarks, or CustomOp("MyOp") for an unknown custom code
    builtin_code: int
    version: int
    inputs: tuple[int, ...]  # -1 marks an omitted optional input
    outputs: tuple[int, ...]
    options: object | None = None  # frozen dataclass: schema_gen's, or a custom op's decoded options
    custom_options: bytes | None = None  # the raw bytes (decoded into ``options`` when gpulite knows the op)
    custom_options_format: int = 0
    intermediates: tuple[int, ...] = ()

    @property
    def is_custom(self) -> bool:
        return self.builtin_code == sg.BuiltinOperator.CUSTOM


@dataclass
class SubgraphDef:
    name: str
    tensors: list[TensorDef]
    operators: list[OperatorDef]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]


@dataclass
class SignatureDef:
    key: str
    subgraph_index: int
    inputs: dict[str, int]
    outputs: dict[str, int]


@dataclass
class Model:
    version: int
    description: str
    subgraphs: list[SubgraphDef]
    buffers: list[np.ndarray]
    metadata: dict[str, np.ndarray]
    signatures: list[SignatureDef]
    data: np.ndarray = field(repr=False, default=None)  # type: ignore[arg-type]


_OPTION_TYPES = {v: k for k, v in sg.BuiltinOptions.__members__.items()}
_OPTION2_TYPES = {v: k for k, v in sg.BuiltinOptions2.__members__.items()}


def load(source: str | Path | bytes | bytearray | memoryview) -> Model:
    """Read a model from a path or from the file's bytes."""
    if isinstance(source, (str, Path)):
        try:
            data = Path(source).read_bytes()
        except OSError as e:
            raise ModelError(f"cannot read model file {str(source)!r}: {e.strerror}") from None
    else:
        data = bytes(source)
    return _Reader(Buffer(data)).model()


def decode_options(t: Table | None, type_index: int, table_name: str | None) -> object | None:
    if not type_index or table_name is None:
        return None
    cls = getattr(sg, table_name, None)
    spec = sg.OPTIONS_FIELDS.get(table_name)
    if cls is None or spec is None:
        raise ModelError(f"builtin options type {type_index} ({table_name}) is not in the schema")
    if t is None:
        return cls()
    values: dict[str, object] = {}
    for name, slot, kind, default in spec:
        if kind.startswith("vec_"):
            arr = t.array(slot, kind[4:], name)
            values[name] = () if arr is None else tuple(arr.tolist())
        elif kind == "str":
            values[name] = t.string(slot, name) or ""
        else:
            values[name] = t.scalar(slot, kind, default)
    return cls(**values)


def _builtin_options_of(op: Op, options: object | None, what: str) -> object | None:
    """The options a builtin node gets: the file's, checked to be the op's table, or the table's
    defaults when the file has none (as LiteRT parses a node without options)."""
    want = op.spec.options
    if options is not None and (want is None or not isinstance(options, want)):
        expected = "none" if want is None else want.__name__
        raise ModelError(f"{what} ({op}): builtin options of type {type(options).__name__}, expected {expected}")
    return want() if options is None and want is not None else options


class _Reader:
    def __init__(self, buf: Buffer) -> None:
        self.buf = buf

    def model(self) -> Model:
        buf = self.buf
        ident = bytes(buf.data[4:8])  # checked before any offset is followed
        if ident not in (b"TFL3", b"\0\0\0\0"):
            found = f"bytes 4-8 are {ident!r}" if buf.size >= 8 else f"the file has only {buf.size} bytes"
            if bytes(buf.data[:4]) == b"PK\x03\x04":
                found += (" (a zip archive: a MediaPipe Tasks .task bundle holds .tflite models, which "
                          "`gpulite inspect` lists and gpulite.tasks runs)")
            raise ModelError(f"not a .tflite file (no TFL3 identifier): {found}, expected b'TFL3'")
        root = buf.root("Model")
        buffers = [self.buffer(i, t) for i, t in enumerate(root.tables(4, "Buffer"))]
        codes = [self.opcode(i, t) for i, t in enumerate(root.tables(1, "OperatorCode"))]
        subgraphs = [self.subgraph(i, t, buffers, codes) for i, t in enumerate(root.tables(2, "SubGraph"))]
        if not subgraphs:
            raise ModelError("model has no subgraphs (expected at least one)")
        metadata = {}
        for t in root.tables(6, "Metadata"):
            b = t.scalar(1, "u32")
            if b >= len(buffers):
                raise ModelError(f"metadata {brief(t.string(0))} names buffer {b}, but there are {len(buffers)}")
            metadata[t.string(0) or ""] = buffers[b]
        sigs = [self.signature(t, subgraphs) for t in root.tables(7, "SignatureDef")]
        return Model(
            version=root.scalar(0, "u32"), description=root.string(3) or "", subgraphs=subgraphs,
            buffers=buffers, metadata=metadata, signatures=sigs, data=buf.array,
        )

    def buffer(self, i: int, t: Table) -> np.ndarray:
        offset, size = t.scalar(1, "u64"), t.scalar(2, "u64")
        if offset > 1:
            self.buf.check(offset, size, f"Buffer[{i}] (stored by offset after the FlatBuffer)")
            return self.buf.array[offset : offset + size]
        arr = t.array(0, "u8", "data")
        return np.zeros(0, np.uint8) if arr is None else arr

    def opcode(self, i: int, t: Table) -> tuple[OpName, int, int]:
        code = max(t.scalar(0, "i8", 0), t.scalar(3, "i32", 0))
        if code not in sg.BuiltinOperator._value2member_map_:
            raise ModelError(f"OperatorCode[{i}]: builtin code {code} is not a TFLite builtin operator")
        op: OpName = Op.from_code(code)
        if code == sg.BuiltinOperator.CUSTOM:
            name = t.string(1, "custom_code") or ""
            if not name:
                raise ModelError(f"OperatorCode[{i}] is CUSTOM but has no custom_code")
            op = op_of(name)
        return op, code, t.scalar(2, "i32", 1)

    def quantization(self, t: Table | None, what: str, shape: tuple[int, ...], dtype: np.dtype | None):
        if t is None:
            return None, None, None
        scale, zp = t.array(2, "f32", "scale"), t.array(3, "i64", "zero_point")
        qmin, qmax = t.array(0, "f32", "min"), t.array(1, "f32", "max")
        if scale is None or scale.size == 0:
            return None, qmin, qmax
        zp = np.zeros(scale.size, np.int64) if zp is None or zp.size == 0 else zp
        if zp.size != scale.size:
            raise ModelError(f"{what}: {scale.size} quantization scales but {zp.size} zero points")
        if not np.isfinite(scale).all():
            raise ModelError(f"{what}: quantization scales {brief(scale.tolist())} are not all finite")
        if dtype is not None and dtype.kind in "iu" and dtype.itemsize <= 2:
            info = np.iinfo(dtype)
            if zp.min() < info.min or zp.max() > info.max:
                raise ModelError(f"{what}: zero points {brief(zp.tolist())} are outside the {dtype} range "
                                 f"[{info.min}, {info.max}]")
        axis = t.scalar(6, "i32", 0)
        if scale.size > 1 and not (0 <= axis < len(shape) and shape[axis] == scale.size):
            raise ModelError(
                f"{what}: per-channel quantization with {scale.size} scales on axis {axis} "
                f"does not fit shape {list(shape)}"
            )
        q = Quantization(scale.astype(np.float32), zp.astype(np.int64), axis, qmin, qmax)
        return q, qmin, qmax

    def sparsity(self, t: Table | None, what: str) -> Sparsity | None:
        if t is None:
            return None
        dims = []
        for d in t.tables(2, "DimensionMetadata"):
            seg = self._index_vector(d, 2, 3, what + " array_segments")
            idx = self._index_vector(d, 4, 5, what + " array_indices")
            dims.append(DimensionMetadata(d.scalar(0, "i8"), d.scalar(1, "i32"), seg, idx))
        order = t.array(0, "i32", "traversal_order")
        bmap = t.array(1, "i32", "block_map")
        return Sparsity(
            tuple(order.tolist()) if order is not None else (),
            tuple(bmap.tolist()) if bmap is not None else (),
            tuple(dims),
        )

    def _index_vector(self, d: Table, type_slot: int, slot: int, what: str) -> np.ndarray | None:
        kind = d.scalar(type_slot, "u8", 0)
        if kind == 0:
            return None
        if kind not in (1, 2, 3):
            raise ModelError(f"{what}: unknown SparseIndexVector type {kind} (expected 1, 2 or 3)")
        v = d.table(slot, what)
        arr = None if v is None else v.array(0, {1: "i32", 2: "u16", 3: "u8"}[kind], "values")
        return np.zeros(0, np.int32) if arr is None else arr.astype(np.int32)

    def tensor(self, i: int, t: Table, buffers: list[np.ndarray], sgname: str) -> TensorDef:
        what = f"{sgname} tensor {i}"
        shape_arr = t.array(0, "i32", "shape")
        shape = tuple(shape_arr.tolist()) if shape_arr is not None else ()
        sig_arr = t.array(7, "i32", "shape_signature")
        signature = tuple(sig_arr.tolist()) if sig_arr is not None and sig_arr.size else shape
        name = t.string(3, "name") or ""
        what = f"{sgname} tensor {i} ({brief(name)})"
        problem = shape_problem(shape)
        if problem:
            raise ModelError(f"{what}: shape {list(shape)} is not a tensor's shape: {problem}")
        if any(d < -1 for d in signature):
            raise ModelError(f"{what}: shape_signature {list(signature)} has a dimension below -1")
        type_code = t.scalar(1, "i8", 0)
        if type_code not in DTYPES:
            name_t = sg.TensorType(type_code).name if type_code in sg.TensorType._value2member_map_ else str(type_code)
            if type_code not in sg.TensorType._value2member_map_:
                raise ModelError(f"{what}: tensor type {type_code} is not a TFLite TensorType")
            dtype = np.dtype(np.uint8)  # INT4, BFLOAT16, RESOURCE...: kept as bytes, no kernel reads them
            _ = name_t
        else:
            dtype = DTYPES[type_code]
        b = t.scalar(2, "u32", 0)
        if b >= max(len(buffers), 1):
            raise ModelError(f"{what}: names buffer {b}, but the model has {len(buffers)} buffers")
        quant, qmin, qmax = self.quantization(t.table(4, "QuantizationParameters"), what, shape,
                                              DTYPES.get(type_code))
        sparsity = self.sparsity(t.table(6, "SparsityParameters"), what)
        data = None
        raw = buffers[b] if b < len(buffers) else None
        if raw is not None and raw.size and dtype != np.object_:
            if sparsity is not None:
                if raw.size % dtype.itemsize:
                    raise ModelError(f"{what}: sparse buffer of {raw.size} bytes is not a whole number of {dtype}")
                data = raw.view(dtype)
            else:
                need = math.prod(shape) * dtype.itemsize
                if type_code in DTYPES and raw.size != need:
                    raise ModelError(
                        f"{what}: buffer {b} holds {raw.size} bytes but shape {list(shape)} of {dtype} needs {need}"
                    )
                if type_code in DTYPES:
                    # Unaligned views are legal in numpy; copy only when alignment forbids a view.
                    data = raw.view(dtype) if raw.ctypes.data % dtype.itemsize == 0 else raw.copy().view(dtype)
                    data = data.reshape(shape)
                else:
                    data = raw
        return TensorDef(
            index=i, name=name, shape=shape, shape_signature=signature, dtype=dtype, type_code=type_code,
            buffer=b, data=data, quantization=quant, sparsity=sparsity, is_variable=t.scalar(5, "bool", False),
            quant_min=qmin, quant_max=qmax, has_shape_signature=sig_arr is not None and sig_arr.size > 0,
        )

    def subgraph(self, si: int, t: Table, buffers, codes) -> SubgraphDef:
        name = t.string(4, "name") or f"subgraph{si}"
        tensors = [self.tensor(i, tt, buffers, name) for i, tt in enumerate(t.tables(0, "Tensor"))]
        n = len(tensors)

        def indices(arr: np.ndarray | None, what: str, allow_omitted: bool) -> tuple[int, ...]:
            vals = () if arr is None else tuple(arr.tolist())
            low = -1 if allow_omitted else 0
            for v in vals:
                if not low <= v < n:
                    raise ModelError(f"{name} {what}: tensor index {v} out of range [0, {n})")
            return vals

        ops = []
        for oi, ot in enumerate(t.tables(3, "Operator")):
            what = f"{name} operator {oi}"
            ci = ot.scalar(0, "u32", 0)
            if ci >= len(codes):
                raise ModelError(f"{what}: opcode_index {ci} but the model has {len(codes)} operator codes")
            op, code, version = codes[ci]
            otype = ot.scalar(3, "u8", 0)
            if otype and otype not in _OPTION_TYPES:
                raise ModelError(f"{what}: builtin_options_type {otype} is not in the schema")
            options = decode_options(ot.table(4, "BuiltinOptions"), otype, _OPTION_TYPES.get(otype))
            otype2 = ot.scalar(11, "u8", 0)
            if otype2:
                if otype2 not in _OPTION2_TYPES:
                    raise ModelError(f"{what}: builtin_options_2_type {otype2} is not in the schema")
                options = decode_options(ot.table(12, "BuiltinOptions2"), otype2, _OPTION2_TYPES[otype2])
            if not op.is_custom:
                options = _builtin_options_of(op, options, what)
            custom = ot.array(5, "u8", "custom_options")
            lo, ls = ot.scalar(9, "u64", 0), ot.scalar(10, "u64", 0)
            if lo > 1:
                self.buf.check(lo, ls, f"{what} large custom options")
                custom = self.buf.array[lo : lo + ls]
            custom_bytes = None if custom is None else bytes(custom)
            if op.is_custom:
                try:
                    options = decode_custom_options(op, version, custom_bytes)
                except ModelError as e:
                    raise ModelError(f"{what} ({op}): {e}") from None
            ops.append(OperatorDef(
                index=oi, op=op, builtin_code=code, version=version,
                inputs=indices(ot.array(1, "i32", "inputs"), f"{what} inputs", True),
                outputs=indices(ot.array(2, "i32", "outputs"), f"{what} outputs", False),
                options=options, custom_options=custom_bytes,
                custom_options_format=ot.scalar(6, "i8", 0),
                intermediates=indices(ot.array(8, "i32", "intermediates"), f"{what} intermediates", True),
            ))
        return SubgraphDef(
            name=name, tensors=tensors, operators=ops,
            inputs=indices(t.array(1, "i32", "inputs"), "inputs", False),
            outputs=indices(t.array(2, "i32", "outputs"), "outputs", False),
        )

    def signature(self, t: Table, subgraphs: list[SubgraphDef]) -> SignatureDef:
        key = t.string(2, "signature_key") or ""
        si = t.scalar(4, "u32", 0)
        if si >= len(subgraphs):
            raise ModelError(f"signature {brief(key)} names subgraph {si}, but there are {len(subgraphs)}")
        n = len(subgraphs[si].tensors)

        def tmap(slot: int, what: str) -> dict[str, int]:
            out = {}
            for m in t.tables(slot, "TensorMap"):
                idx = m.scalar(1, "u32", 0)
                if idx >= n:
                    raise ModelError(f"signature {brief(key)} {what} names tensor {idx}, but there are {n}")
                out[m.string(0) or ""] = idx
            return out

        return SignatureDef(key, si, tmap(0, "inputs"), tmap(1, "outputs"))
