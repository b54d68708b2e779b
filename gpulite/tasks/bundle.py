"""MediaPipe Tasks model assets: a ``.tflite`` model or a ``.task`` bundle.

A ``.task`` bundle is a zip archive of the models a task runs (``face_landmarker.task`` holds
``face_detector.tflite``, ``face_landmarks_detector.tflite``, ``face_blendshapes.tflite`` and
``geometry_pipeline_metadata_landmarks.binarypb``; a bundle may hold bundles, as
``gesture_recognizer.task`` holds ``hand_landmarker.task``). A task's ``BaseOptions`` name its
asset by ``model_asset_buffer`` (the bytes; it wins when both are given, as in MediaPipe) or
``model_asset_path``: a file, or a bare zoo name such as ``"face_landmarker"`` or
``"efficientnet_lite0"``, fetched and checked against its pinned sha256 by :mod:`gpulite.zoo`.

Errors are those MediaPipe 1.2.2 raises, in type and meaning, each a :class:`GpuliteError` too:

=====================================  ==========================  ===============================
what                                   raises                      MediaPipe 1.2.2's message
=====================================  ==========================  ===============================
neither a path nor a buffer            :class:`AssetOptionsError`  "ExternalFile must specify ..."
                                       (``ValueError``)
a path that names no file              :class:`AssetNotFoundError` "Unable to open file at PATH"
                                       (``FileNotFoundError``)
a bundle that is not a readable zip    :class:`BundleError`        "Unable to open zip archive."
(truncated, not a zip, empty, bad CRC) (``RuntimeError``)
a bundle without a file the task needs :class:`AssetNotFoundError` "No file with name: X. All
(the wrong task's bundle)              (``FileNotFoundError``)     files in the model asset
                                                                   bundle are: ..."
a model that is not a .tflite          :class:`~gpulite.ModelError` "The model is not a valid
                                       (``ValueError``)            Flatbuffer buffer"
=====================================  ==========================  ===============================

MediaPipe does not check the members' CRCs (a bundle with a flipped byte loads); gpulite does,
and calls such a bundle unreadable.

Usage::

    b = Bundle.open(read_asset(model_asset_path="face_landmarker"))
    detector = b.file("face_detector.tflite")            # bytes of a .tflite
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

from gpulite import zoo
from gpulite.errors import GpuliteError, ModelError
from gpulite.model.metadata import unzip
from gpulite.model.reader import Model, load

# A member larger than this (uncompressed) is refused: the zip's declared size must not decide
# how much memory is taken. The largest MediaPipe bundle member is a few hundred MB.
MAX_MEMBER_BYTES = 1 << 30


class BundleError(GpuliteError, RuntimeError):
    """A model asset bundle is not a readable zip archive (MediaPipe: ``RuntimeError``)."""


class AssetNotFoundError(GpuliteError, FileNotFoundError):
    """A model asset file, or a file inside a bundle, does not exist (MediaPipe: ``FileNotFoundError``)."""


class AssetOptionsError(GpuliteError, ValueError):
    """``BaseOptions`` name no model asset (MediaPipe: ``ValueError``)."""


def read_asset(model_asset_path: str | Path | None = None,
               model_asset_buffer: bytes | bytearray | memoryview | None = None) -> bytes:
    """The bytes of a task's model asset, as ``BaseOptions`` name it.

    Parameters
    ----------
    model_asset_path : str or Path, optional
        A ``.tflite`` or ``.task`` file, or a bare zoo name (``gpulite models list``).
    model_asset_buffer : bytes, optional
        The asset's bytes; used when given, whatever the path.

    Raises
    ------
    AssetOptionsError
        Neither is given (or the buffer is empty).
    AssetNotFoundError
        The path names no file and no zoo model.
    ModelError
        A zoo model could not be fetched or its digest is wrong.
    """
    if model_asset_buffer is not None and len(model_asset_buffer):
        return bytes(model_asset_buffer)
    if model_asset_path is None or str(model_asset_path) == "":
        raise AssetOptionsError("ExternalFile must specify at least one of 'file_content', 'file_name', "
                                "'file_pointer_meta' or 'file_descriptor_meta': BaseOptions need "
                                "model_asset_path or a non-empty model_asset_buffer")
    p = Path(model_asset_path)
    if not p.is_file() and (zoo.is_path(model_asset_path) or str(model_asset_path) not in zoo.ALL_NAMES):
        kind = "a directory" if p.is_dir() else "no such file"
        hint = "" if zoo.is_path(model_asset_path) else (
            f" and no zoo model of that name (known: {', '.join(zoo.ALL_NAMES)})")
        if not p.exists() and p.stem in zoo.ALL_NAMES:  # "face_landmarker.task", copied from MediaPipe's docs
            hint = f" (the zoo's {p.stem!r}, named without folder or suffix, is fetched and checked)"
        raise AssetNotFoundError(f"Unable to open file at {model_asset_path}: {kind}{hint}")
    path = p if p.is_file() else zoo.resolve(str(model_asset_path))
    try:
        return path.read_bytes()
    except OSError as e:
        raise AssetNotFoundError(f"Unable to open file at {model_asset_path}: {e.strerror}") from None


class Bundle:
    """The files of a ``.task`` bundle (or of a ``.tflite`` with packed files), read and
    CRC-checked when opened.

    Attributes
    ----------
    files : dict
        Member name -> bytes, in the archive's order.
    """

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    @classmethod
    def open(cls, data: bytes | bytearray | memoryview) -> Bundle:
        """Read a bundle from its bytes.

        Raises
        ------
        BundleError
            Not a zip archive, truncated, or a member that fails its CRC or is too large.
        """
        if not len(data):
            raise BundleError("Unable to open zip archive: the model asset is empty (0 bytes)")
        stream = io.BytesIO(data)
        if not zipfile.is_zipfile(stream):
            raise BundleError(f"Unable to open zip archive: the {len(data)}-byte model asset is not a zip "
                              "archive (a .task bundle), or it is truncated")
        try:
            files = unzip(stream, MAX_MEMBER_BYTES)
        except ModelError as e:
            raise BundleError(f"Unable to open zip archive: {e}") from None
        return cls(files)

    @property
    def names(self) -> list[str]:
        """The member names, in the archive's order."""
        return list(self.files)

    def file(self, name: str) -> bytes:
        """The member ``name``.

        Raises
        ------
        AssetNotFoundError
            The bundle has no such member (MediaPipe's message, listing what it has).
        """
        if name not in self.files:
            raise AssetNotFoundError(f"No file with name: {name}. All files in the model asset bundle are: "
                                     f"{', '.join(self.files)}.")
        return self.files[name]

    def model(self, name: str) -> bytes:
        """The ``.tflite`` member ``name``, checked to be a whole model (:func:`check_model`)."""
        data = self.file(name)
        check_model(data, name)
        return data

    def has(self, name: str) -> bool:
        return name in self.files

    def bundle(self, name: str) -> Bundle:
        """The nested bundle ``name`` (e.g. ``hand_landmarker.task`` in ``gesture_recognizer.task``)."""
        return Bundle.open(self.file(name))


def open_bundle(model_asset_path: str | Path | None = None,
                model_asset_buffer: bytes | bytearray | memoryview | None = None) -> Bundle:
    """:func:`read_asset` then :meth:`Bundle.open`."""
    return Bundle.open(read_asset(model_asset_path, model_asset_buffer))


def assemble(members: dict[str, bytes]) -> bytes:
    """A ``.task`` bundle holding ``members`` (name -> bytes), stored uncompressed as MediaPipe's
    are; the same members give the same bytes (fixed dates and modes), so a bundle can be pinned."""
    return zoo.zip_members(members)


def check_model(data: bytes, what: str = "model") -> Model:
    """The model in ``data``, read whole; MediaPipe's error for bytes that are not a ``.tflite``
    (e.g. a ``.task`` given to a single-model task) or a truncated or corrupt one:
    :class:`ModelError`, a ``ValueError``."""
    if len(data) < 8 or bytes(data[4:8]) not in (b"TFL3", b"\0\0\0\0"):
        head = bytes(data[4:8]) if len(data) >= 8 else f"{len(data)} bytes"
        raise ModelError(f"The model is not a valid Flatbuffer buffer: the {what} has no TFL3 identifier "
                         f"(bytes 4-8: {head!r}); a .task bundle needs the task it was made for")
    try:
        return load(data)
    except ModelError as e:
        raise ModelError(f"The model is not a valid Flatbuffer buffer: the {what} ({len(data)} bytes) is "
                         f"truncated or corrupt: {e}") from None
