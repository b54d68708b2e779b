"""TFLite Metadata: the ``TFLITE_METADATA`` flatbuffer of a model and its packed files.

Models made for MediaPipe Tasks and the TFLite Task Library describe themselves with a second
FlatBuffer (schema ``metadata_schema.fbs`` of tflite-support, file identifier ``M001``, version
1.5.0 here) stored in one of the model's buffers under the metadata name ``TFLITE_METADATA``:
the model's name, version, author and licence, and for each input and output tensor its
content (image, bounding boxes, features), process units (normalization mean and std, score
calibration, score threshold) and associated files (label maps, calibration tables). The
associated files themselves are zipped and appended after the FlatBuffer, so a ``.tflite``
with metadata is also a valid zip archive.

Everything is read through :mod:`gpulite.model.flatbuf`'s bounds-checked tables; a malformed
buffer, a wrong identifier, an unknown union type or a damaged zip raises
:class:`~gpulite.errors.ModelError` saying which part is wrong.

Usage::

    from gpulite.model.metadata import load_metadata
    md = load_metadata("efficientnet_lite0.tflite")       # None when the model has none
    md.input_normalization()                               # ((127.0,), (128.0,))
    md.labels(md.subgraphs[0].outputs[0])                  # ['background', 'tench', ...]
"""

from __future__ import annotations

import dataclasses
import io
import re
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

import numpy as np

from gpulite.errors import ModelError, brief
from gpulite.model.flatbuf import Buffer, Table
from gpulite.model.reader import Model, load

METADATA_NAME = "TFLITE_METADATA"
IDENTIFIER = b"M001"
# A packed file larger than this (uncompressed) is refused: label maps and calibration tables
# are kilobytes, and a zip's declared size must not decide how much memory is taken.
MAX_FILE_BYTES = 64 << 20

FILE_TYPES = {0: "UNKNOWN", 1: "DESCRIPTIONS", 2: "TENSOR_AXIS_LABELS", 3: "TENSOR_VALUE_LABELS",
              4: "TENSOR_AXIS_SCORE_CALIBRATION", 5: "VOCABULARY", 6: "SCANN_INDEX_FILE"}
COLOR_SPACES = {0: "UNKNOWN", 1: "RGB", 2: "GRAYSCALE"}
BOX_TYPES = {0: "UNKNOWN", 1: "BOUNDARIES", 2: "UPPER_LEFT", 3: "CENTER"}
COORDINATE_TYPES = {0: "RATIO", 1: "PIXEL"}
SCORE_TRANSFORMS = {0: "IDENTITY", 1: "LOG", 2: "INVERSE_LOGISTIC"}


@dataclass(frozen=True)
class AssociatedFile:
    """A file that a tensor, subgraph or the model refers to, packed in the model's zip."""

    name: str
    description: str = ""
    type: str = "UNKNOWN"  # one of FILE_TYPES' values
    locale: str = ""
    version: str = ""


@dataclass(frozen=True)
class ImageProperties:
    color_space: str = "UNKNOWN"
    default_size: tuple[int, int] | None = None  # (width, height)


@dataclass(frozen=True)
class BoundingBoxProperties:
    index: tuple[int, ...] = ()  # the order of the four values; () is the type's default order
    type: str = "UNKNOWN"
    coordinate_type: str = "RATIO"


@dataclass(frozen=True)
class FeatureProperties:
    pass


@dataclass(frozen=True)
class AudioProperties:
    sample_rate: int = 0
    channels: int = 0


@dataclass(frozen=True)
class Content:
    properties: ImageProperties | BoundingBoxProperties | FeatureProperties | AudioProperties | None = None
    range: tuple[int, int] | None = None  # (min, max) dimensions the content spans


@dataclass(frozen=True)
class NormalizationOptions:
    """``(x - mean) / std`` per channel (one value applies to every channel)."""

    mean: tuple[float, ...] = ()
    std: tuple[float, ...] = ()


@dataclass(frozen=True)
class ScoreCalibrationOptions:
    score_transformation: str = "IDENTITY"
    default_score: float = 0.0


@dataclass(frozen=True)
class ScoreThresholdingOptions:
    global_score_threshold: float = 0.0


@dataclass(frozen=True)
class TokenizerOptions:
    """Bert, SentencePiece or Regex tokenizer options (text models; kept for ``inspect``)."""

    kind: str
    files: tuple[AssociatedFile, ...] = ()
    delim_regex_pattern: str = ""


ProcessUnit = NormalizationOptions | ScoreCalibrationOptions | ScoreThresholdingOptions | TokenizerOptions
U = TypeVar("U", NormalizationOptions, ScoreCalibrationOptions, ScoreThresholdingOptions, TokenizerOptions)


@dataclass(frozen=True)
class TensorMetadata:
    name: str = ""
    description: str = ""
    dimension_names: tuple[str, ...] = ()
    content: Content | None = None
    process_units: tuple[ProcessUnit, ...] = ()
    stats_max: tuple[float, ...] = ()
    stats_min: tuple[float, ...] = ()
    associated_files: tuple[AssociatedFile, ...] = ()

    def unit(self, kind: type[U]) -> U | None:
        """The first process unit of class ``kind``, or None."""
        return next((u for u in self.process_units if isinstance(u, kind)), None)

    def files_of(self, type_name: str, locale: str = "") -> list[AssociatedFile]:
        """The associated files of type ``type_name`` (those of ``locale`` only when given)."""
        return [f for f in self.associated_files if f.type == type_name and (not locale or f.locale == locale)]


@dataclass(frozen=True)
class TensorGroup:
    name: str = ""
    tensor_names: tuple[str, ...] = ()


@dataclass(frozen=True)
class SubGraphMetadata:
    name: str = ""
    description: str = ""
    inputs: tuple[TensorMetadata, ...] = ()
    outputs: tuple[TensorMetadata, ...] = ()
    associated_files: tuple[AssociatedFile, ...] = ()
    input_process_units: tuple[ProcessUnit, ...] = ()
    output_process_units: tuple[ProcessUnit, ...] = ()
    input_tensor_groups: tuple[TensorGroup, ...] = ()
    output_tensor_groups: tuple[TensorGroup, ...] = ()
    custom_metadata: dict[str, bytes] = field(default_factory=dict)


@dataclass(frozen=True)
class ModelMetadata:
    """A model's TFLite Metadata and the files packed after it (``files``: name -> bytes)."""

    name: str = ""
    description: str = ""
    version: str = ""
    subgraphs: tuple[SubGraphMetadata, ...] = ()
    author: str = ""
    license: str = ""
    associated_files: tuple[AssociatedFile, ...] = ()
    min_parser_version: str = ""
    files: dict[str, bytes] = field(default_factory=dict, repr=False)

    def file(self, name: str) -> bytes:
        """The packed file ``name``; a name the metadata lists but the zip lacks is a ModelError."""
        if name not in self.files:
            raise ModelError(f"the model's metadata names associated file {brief(name)}, but the model packs "
                             f"{sorted(self.files) if self.files else 'no files'}")
        return self.files[name]

    def labels(self, tensor: TensorMetadata, type_name: str = "TENSOR_AXIS_LABELS",
               locale: str = "") -> list[str]:
        """The label map of ``tensor``: the lines of its first ``type_name`` file (of ``locale``,
        when given), as MediaPipe reads them; [] when it has none."""
        found = tensor.files_of(type_name, locale)
        return [] if not found else split_labels(self.file(found[0].name), found[0].name)

    def input_normalization(self, index: int = 0) -> tuple[tuple[float, ...], tuple[float, ...]] | None:
        """``(mean, std)`` of input ``index`` of the main subgraph, or None when not given."""
        sg = self.subgraphs[0] if self.subgraphs else None
        if sg is None or index >= len(sg.inputs):
            return None
        unit = sg.inputs[index].unit(NormalizationOptions)
        return None if unit is None else (unit.mean, unit.std)


def split_labels(data: bytes, name: str = "labels") -> list[str]:
    """Lines of a label file as MediaPipe's ``BuildLabelMapFromFiles`` splits them (``ForEachLine``:
    at ``\\r\\n``, ``\\r`` or ``\\n``; a final newline ends the last line, and one empty last line
    is dropped). An empty file is an error (MediaPipe refuses one too)."""
    if not data:
        raise ModelError(f"associated file {brief(name)} is empty (expected one label per line)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelError(f"associated file {brief(name)} is not UTF-8 text ({e.reason} at byte {e.start})") from None
    lines = re.split(r"\r\n|\r|\n", text)
    if text.endswith(("\n", "\r")):
        lines.pop()  # the split's empty piece after the final newline: ForEachLine makes none
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def load_metadata(source: str | Path | bytes | bytearray | memoryview | Model) -> ModelMetadata | None:
    """The TFLite Metadata of a model (a path, the file's bytes, or a loaded :class:`Model`),
    or None when it has no ``TFLITE_METADATA`` entry.

    Raises
    ------
    ModelError
        The model, its metadata buffer or its packed files are malformed.
    """
    model = source if isinstance(source, Model) else load(source)
    raw = model.metadata.get(METADATA_NAME)
    if raw is None:
        return None
    return dataclasses.replace(parse_metadata(raw), files=read_packed_files(model.data))


def parse_metadata(data: bytes | bytearray | memoryview | np.ndarray) -> ModelMetadata:
    """Parse a ``TFLITE_METADATA`` buffer (without the packed files: see :func:`load_metadata`).

    Raises
    ------
    ModelError
        Not a metadata buffer (identifier), or an offset, length, enum or union type that
        does not fit; the message names the table and field.
    """
    try:
        return _Reader(Buffer(data)).model_metadata()
    except ModelError as e:
        raise ModelError(f"{METADATA_NAME} ({len(data)} bytes): {e}") from None


def read_packed_files(data) -> dict[str, bytes]:
    """The files zipped after a model's FlatBuffer (name -> bytes); {} when there is no zip.

    Raises
    ------
    ModelError
        A damaged zip (bad CRC, truncated member, unsupported compression or encryption) or a
        member larger than :data:`MAX_FILE_BYTES`.
    """
    stream = io.BytesIO(memoryview(data))
    if not zipfile.is_zipfile(stream):
        return {}
    try:
        return unzip(stream, MAX_FILE_BYTES)
    except ModelError as e:
        raise ModelError(f"the files packed after the model (a zip archive) are damaged: {e}") from None


def unzip(stream: io.BytesIO, limit: int) -> dict[str, bytes]:
    """The files of the zip archive in ``stream`` (name -> bytes, in the archive's order, directories
    left out), each read whole and CRC-checked; a model's packed files, a ``.task`` bundle's members.

    Raises
    ------
    ModelError
        A damaged archive (bad CRC, truncated member, unsupported compression or encryption) or a
        member declaring more than ``limit`` bytes (zipfile reads no more than a member declares).
    """
    out: dict[str, bytes] = {}
    try:
        with zipfile.ZipFile(stream) as zf:
            for info in zf.infolist():
                if info.is_dir():
                    continue
                if info.file_size > limit:
                    raise ModelError(f"member {brief(info.filename)} declares {info.file_size} bytes, "
                                     f"more than {limit}")
                out[info.filename] = zf.read(info)
    except (zipfile.BadZipFile, zlib.error, EOFError, NotImplementedError, RuntimeError, ValueError,
            OverflowError, OSError) as e:
        raise ModelError(str(e)) from None
    return out


class _Reader:
    def __init__(self, buf: Buffer) -> None:
        self.buf = buf

    def model_metadata(self) -> ModelMetadata:
        ident = bytes(self.buf.data[4:8]) if self.buf.size >= 8 else b""
        if ident != IDENTIFIER:
            raise ModelError(f"not a TFLite Metadata buffer: identifier {ident!r}, expected {IDENTIFIER!r}")
        t = self.buf.root("ModelMetadata")
        return ModelMetadata(
            name=_s(t, 0), description=_s(t, 1), version=_s(t, 2),
            subgraphs=tuple(self.subgraph(s) for s in t.tables(3, "SubGraphMetadata")),
            author=_s(t, 4), license=_s(t, 5), associated_files=self.files(t, 6),
            min_parser_version=_s(t, 7),
        )

    def subgraph(self, t: Table) -> SubGraphMetadata:
        custom = {}
        for c in t.tables(9, "CustomMetadata"):
            data = c.array(1, "u8", "data")
            custom[_s(c, 0)] = b"" if data is None else data.tobytes()
        return SubGraphMetadata(
            name=_s(t, 0), description=_s(t, 1),
            inputs=tuple(self.tensor(x) for x in t.tables(2, "TensorMetadata")),
            outputs=tuple(self.tensor(x) for x in t.tables(3, "TensorMetadata")),
            associated_files=self.files(t, 4),
            input_process_units=tuple(self.unit(u) for u in t.tables(5, "ProcessUnit")),
            output_process_units=tuple(self.unit(u) for u in t.tables(6, "ProcessUnit")),
            input_tensor_groups=tuple(self.group(g) for g in t.tables(7, "TensorGroup")),
            output_tensor_groups=tuple(self.group(g) for g in t.tables(8, "TensorGroup")),
            custom_metadata=custom,
        )

    def tensor(self, t: Table) -> TensorMetadata:
        stats = t.table(5, "Stats")
        return TensorMetadata(
            name=_s(t, 0), description=_s(t, 1), dimension_names=tuple(t.strings(2, "dimension_names")),
            content=self.content(t.table(3, "Content")),
            process_units=tuple(self.unit(u) for u in t.tables(4, "ProcessUnit")),
            stats_max=_floats(stats, 0), stats_min=_floats(stats, 1),
            associated_files=self.files(t, 6),
        )

    def content(self, t: Table | None) -> Content | None:
        if t is None:
            return None
        kind = t.scalar(0, "u8", 0)
        p = t.table(1, "ContentProperties")
        props: ImageProperties | BoundingBoxProperties | FeatureProperties | AudioProperties | None
        if kind == 0:
            props = None
        elif kind == 1:
            props = FeatureProperties()
        elif kind == 2:
            size = None if p is None else p.table(1, "ImageSize")
            props = ImageProperties(
                _enum(COLOR_SPACES, 0 if p is None else p.scalar(0, "i8", 0), "ColorSpaceType"),
                None if size is None else (size.scalar(0, "u32", 0), size.scalar(1, "u32", 0)))
        elif kind == 3:
            index = None if p is None else p.array(0, "u32", "index")
            props = BoundingBoxProperties(
                () if index is None else tuple(int(i) for i in index),
                _enum(BOX_TYPES, 0 if p is None else p.scalar(1, "i8", 0), "BoundingBoxType"),
                _enum(COORDINATE_TYPES, 0 if p is None else p.scalar(2, "i8", 0), "CoordinateType"))
        elif kind == 4:
            props = AudioProperties() if p is None else AudioProperties(p.scalar(0, "u32", 0), p.scalar(1, "u32", 0))
        else:
            raise ModelError(f"Content: content_properties type {kind} is not in the schema (expected 0-4)")
        r = t.table(2, "ValueRange")
        return Content(props, None if r is None else (r.scalar(0, "i32", 0), r.scalar(1, "i32", 0)))

    def unit(self, t: Table) -> ProcessUnit:
        kind = t.scalar(0, "u8", 0)
        o = t.table(1, "ProcessUnitOptions")
        if kind == 1:
            return NormalizationOptions(_floats(o, 0), _floats(o, 1))
        if kind == 2:
            return ScoreCalibrationOptions(
                _enum(SCORE_TRANSFORMS, 0 if o is None else o.scalar(0, "i8", 0), "ScoreTransformationType"),
                0.0 if o is None else o.scalar(1, "f32", 0.0))
        if kind == 3:
            return ScoreThresholdingOptions(0.0 if o is None else o.scalar(0, "f32", 0.0))
        if kind == 4:
            return TokenizerOptions("BertTokenizer", () if o is None else self.files(o, 0))
        if kind == 5:
            return TokenizerOptions("SentencePieceTokenizer",
                                    () if o is None else self.files(o, 0) + self.files(o, 1))
        if kind == 6:
            return TokenizerOptions("RegexTokenizer", () if o is None else self.files(o, 1),
                                    "" if o is None else _s(o, 0))
        raise ModelError(f"ProcessUnit: options type {kind} is not in the schema (expected 1-6)")

    def group(self, t: Table) -> TensorGroup:
        return TensorGroup(_s(t, 0), tuple(t.strings(1, "tensor_names")))

    def files(self, t: Table, slot: int) -> tuple[AssociatedFile, ...]:
        return tuple(
            AssociatedFile(_s(f, 0), _s(f, 1), _enum(FILE_TYPES, f.scalar(2, "i8", 0), "AssociatedFileType"),
                           _s(f, 3), _s(f, 4))
            for f in t.tables(slot, "AssociatedFile"))


def _s(t: Table, slot: int) -> str:
    return t.string(slot, f"field {slot}") or ""


def _floats(t: Table | None, slot: int) -> tuple[float, ...]:
    arr = None if t is None else t.array(slot, "f32", f"field {slot}")
    return () if arr is None else tuple(float(v) for v in arr)


def _enum(names: dict[int, str], value: int, what: str) -> str:
    if value not in names:
        raise ModelError(f"{what} {value} is not in the schema (expected one of {sorted(names)})")
    return names[value]


def add_metadata(model: bytes, metadata: bytes, name: str = METADATA_NAME) -> bytes:
    """``model`` with one more metadata entry ``name`` holding ``metadata`` (a ``TFLITE_METADATA``
    buffer, say), the rest unchanged.

    The new ``Model`` table and its ``buffers`` and ``metadata`` vectors are written in front of
    the old FlatBuffer, which follows whole (16-byte aligned) and which they reference: FlatBuffer
    offsets point forward, so the old tables keep theirs. The old root table is left unused.

    Raises
    ------
    ModelError
        The model is malformed, already has an entry ``name``, or stores buffers by absolute
        offset (large models), which moving would break.
    """
    import flatbuffers

    old = Buffer(model)
    m = load(model)  # checks the model
    if name in m.metadata:
        raise ModelError(f"the model already has a metadata entry {name!r}")
    root = old.root("Model")
    buffers = [_table_pos(t) for t in root.tables(4, "Buffer")]
    if any(t.scalar(1, "u64", 0) > 1 for t in root.tables(4, "Buffer")):
        raise ModelError("the model stores buffers by absolute offset; add_metadata cannot move it")
    entries = [_table_pos(t) for t in root.tables(6, "Metadata")]
    fb = flatbuffers.Builder(len(model) + len(metadata) + 1024)
    fb.StartVector(1, len(model), 16)
    fb.head -= len(model)  # the old bytes in one copy (what PrependByte would do byte by byte)
    fb.Bytes[fb.head:fb.head + len(model)] = model
    block = fb.EndVector()
    at = lambda pos: block - 4 - pos  # noqa: E731  the builder offset of an old object at file position pos
    data = fb.CreateByteVector(metadata)
    fb.StartObject(3)
    fb.PrependUOffsetTRelativeSlot(0, data, 0)
    new_buffer = fb.EndObject()
    name_off = fb.CreateString(name)
    fb.StartObject(2)
    fb.PrependUint32Slot(1, len(buffers), 0)
    fb.PrependUOffsetTRelativeSlot(0, name_off, 0)
    new_entry = fb.EndObject()
    vectors = {}
    for slot, offsets in ((4, [*map(at, buffers), new_buffer]), (6, [*map(at, entries), new_entry])):
        fb.StartVector(4, len(offsets), 4)
        for off in reversed(offsets):
            fb.PrependUOffsetTRelative(off)
        vectors[slot] = fb.EndVector()
    fb.StartObject(8)
    for slot in (1, 2, 3, 5, 7):  # operator_codes, subgraphs, description, metadata_buffer, signature_defs
        target = root._deref(slot, f"field {slot}")
        if target:
            fb.PrependUOffsetTRelativeSlot(slot, at(target), 0)
    fb.PrependUOffsetTRelativeSlot(4, vectors[4], 0)
    fb.PrependUOffsetTRelativeSlot(6, vectors[6], 0)
    fb.PrependUint32Slot(0, root.scalar(0, "u32", 0), 0)
    fb.Finish(fb.EndObject(), file_identifier=b"TFL3")
    return bytes(fb.Output())


def _table_pos(t: Table) -> int:
    return t.pos
