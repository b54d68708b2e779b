"""``Image`` and ``ImageFormat``: MediaPipe's image container (``mp.Image``), on numpy.

An :class:`Image` holds a read-only copy of the pixels it is made from, row-major and
interleaved, as MediaPipe's does; ``numpy_view()`` hands them back without a copy. The checks
are MediaPipe 1.2.2's (the dtype picks the family of formats, the format must be one of it), plus
one MediaPipe leaves out: the number of channels must be the format's (MediaPipe reads a 4-channel
array given as ``SRGB`` as if it had 3).

Usage::

    import gpulite as mp                           # was: import mediapipe as mp
    image = mp.Image.create_from_file("photo.jpg")
    image = mp.Image(image_format=mp.ImageFormat.SRGB, data=rgb)   # (H, W, 3) uint8
    image.width, image.height, image.numpy_view().shape
"""

from __future__ import annotations

import enum
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.tasks.errors import ImageDecodeError, ImageFormatError


class ImageFormat(enum.IntEnum):
    """Pixel formats, MediaPipe's values. SRGB: 3 x uint8; SRGBA: 4 x uint8; GRAY8: 1 x uint8;
    GRAY16, SRGB48, SRGBA64: 1, 3, 4 x uint16; VEC32F1, VEC32F2, VEC32F4: 1, 2, 4 x float32."""

    UNKNOWN = 0
    SRGB = 1
    SRGBA = 2
    GRAY8 = 3
    GRAY16 = 4
    SRGB48 = 7
    SRGBA64 = 8
    VEC32F1 = 9
    VEC32F2 = 12
    VEC32F4 = 13


# format -> (dtype, channels)
LAYOUT = {
    ImageFormat.SRGB: (np.dtype(np.uint8), 3),
    ImageFormat.SRGBA: (np.dtype(np.uint8), 4),
    ImageFormat.GRAY8: (np.dtype(np.uint8), 1),
    ImageFormat.GRAY16: (np.dtype(np.uint16), 1),
    ImageFormat.SRGB48: (np.dtype(np.uint16), 3),
    ImageFormat.SRGBA64: (np.dtype(np.uint16), 4),
    ImageFormat.VEC32F1: (np.dtype(np.float32), 1),
    ImageFormat.VEC32F2: (np.dtype(np.float32), 2),
    ImageFormat.VEC32F4: (np.dtype(np.float32), 4),
}
_FAMILY = {"uint8": "uint8 data", "uint16": "uint16 data", "float32": "float data"}


class Image:
    """An image or a video frame (MediaPipe's ``mp.Image``).

    Parameters
    ----------
    image_format : ImageFormat
    data : numpy.ndarray
        (H, W) or (H, W, C): uint8 for GRAY8, SRGB, SRGBA; uint16 for GRAY16, SRGB48, SRGBA64;
        float32 for VEC32F1, VEC32F2, VEC32F4. It is copied.

    Raises
    ------
    ImageFormatError
        (a ``ValueError``) another dtype, another number of dimensions, a format of another
        dtype's family, or a number of channels that is not the format's.
    """

    def __init__(self, image_format: ImageFormat, data: np.ndarray) -> None:
        if not isinstance(data, np.ndarray):
            raise TypeError(f"Image: data must be a numpy array, got {type(data).__name__}")
        if data.ndim not in (2, 3):
            raise ImageFormatError(f"Unsupported number of dimensions:{data.ndim} (shape {data.shape}; expected "
                                   "(H, W) or (H, W, C))")
        if data.dtype.name not in _FAMILY:
            raise ImageFormatError(f"Unsupported numpy data type: {data.dtype} (expected uint8, uint16 or float32)")
        try:
            fmt = ImageFormat(image_format)
        except ValueError:
            raise ImageFormatError(f"Unsupported image format: {image_format!r}") from None
        family = [f.name for f, (dt, _) in LAYOUT.items() if dt == data.dtype]
        if fmt not in LAYOUT or LAYOUT[fmt][0] != data.dtype:
            raise ImageFormatError(f"Unsupported image format: {fmt.name} (expected {', '.join(family[:-1])}, or "
                                   f"{family[-1]} for {_FAMILY[data.dtype.name]})")
        channels = 1 if data.ndim == 2 else data.shape[2]
        if channels != LAYOUT[fmt][1]:
            raise ImageFormatError(f"Image: {fmt.name} has {LAYOUT[fmt][1]} channel(s), the data has {channels} "
                                   f"(shape {data.shape})")
        if data.shape[0] < 1 or data.shape[1] < 1:
            raise ImageFormatError(f"Image: the data is empty (shape {data.shape})")
        pixels = np.array(data.reshape(data.shape[0], data.shape[1], channels), order="C", copy=True)
        pixels.flags.writeable = False
        self._format = fmt
        self._data = pixels

    @classmethod
    def create_from_file(cls, file_name: str | Path) -> Image:
        """An image decoded from a file (PNG, JPEG, BMP, ...): SRGB, or SRGBA when it has alpha,
        GRAY8 / GRAY16 for a grayscale file.

        Raises
        ------
        FileNotFoundError
            No such file.
        ImageDecodeError
            (a ``RuntimeError``) the file is not an image that can be decoded, or is a folder.
        """
        from PIL import Image as PILImage
        from PIL import UnidentifiedImageError

        path = Path(file_name)
        if path.is_dir():  # MediaPipe: RuntimeError, "Error while reading file: PATH"
            raise ImageDecodeError(f"Error while reading file: {file_name}: a folder, not an image file")
        if not path.is_file():
            raise FileNotFoundError(f"Can't find file: {file_name}")
        try:
            with PILImage.open(path) as im:
                im.load()
                if im.mode == "L":
                    return cls(ImageFormat.GRAY8, np.asarray(im))
                if im.mode in ("I;16", "I;16B", "I;16L"):
                    return cls(ImageFormat.GRAY16, np.asarray(im).astype(np.uint16))
                if im.mode in ("RGBA", "LA", "PA") or (im.mode == "P" and "transparency" in im.info):
                    return cls(ImageFormat.SRGBA, np.asarray(im.convert("RGBA")))
                return cls(ImageFormat.SRGB, np.asarray(im.convert("RGB")))
        except (UnidentifiedImageError, OSError, ValueError) as e:
            raise ImageDecodeError(f"Failed to load image from file {file_name}: {e}") from None

    def numpy_view(self) -> np.ndarray:
        """The pixels as a read-only (H, W, C) array (no copy; ``np.copy`` it to change it)."""
        return self._data

    def __getitem__(self, key: tuple[int, ...]) -> Any:
        """The value at (row, column[, channel])."""
        if len(key) == 2 and self.channels == 1:
            key = (*key, 0)
        return self._data[key].item()

    @property
    def width(self) -> int:
        return int(self._data.shape[1])

    @property
    def height(self) -> int:
        return int(self._data.shape[0])

    @property
    def channels(self) -> int:
        return int(self._data.shape[2])

    @property
    def image_format(self) -> ImageFormat:
        return self._format

    @property
    def step(self) -> int:
        """Bytes per row."""
        return int(self._data.strides[0])

    def uses_gpu(self) -> bool:
        return False

    def is_contiguous(self) -> bool:
        return True

    def is_empty(self) -> bool:
        return self._data.size == 0

    def is_aligned(self, alignment_boundary: int) -> bool:
        """Whether each row starts on a multiple of ``alignment_boundary`` bytes (1 or a power of 2)."""
        if alignment_boundary < 1 or alignment_boundary & (alignment_boundary - 1):
            raise ValueError(f"alignment_boundary must be 1 or a power of 2, got {alignment_boundary}")
        return self._data.ctypes.data % alignment_boundary == 0 and self.step % alignment_boundary == 0

    def __repr__(self) -> str:
        return f"Image({self._format.name}, {self.width}x{self.height})"
