"""Typed values that flow between the perception calculators (MediaPipe's protos, as dataclasses).

Coordinates are *relative* (normalised) to the image they refer to, as MediaPipe's
``RELATIVE_BOUNDING_BOX``/``NormalizedLandmark``: x from the left edge, y from the top edge,
both in [0, 1] inside the image. All values are frozen: a packet's payload never changes
after it is sent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np


class PipelineValueError(ValueError):
    """A calculator received a value of the right type but unusable content (names both)."""


def host_array(tensor: object) -> object:
    """A tensor packet on the host: a GPU tensor (it has ``data_sync``) read back, anything
    else (a numpy array) as it is."""
    return tensor.data_sync() if hasattr(tensor, "data_sync") else tensor


def host_arrays(tensors: list) -> list:
    """:func:`host_array` of each of ``tensors``, the pipeline's GPU tensors (``DeviceTensor``s of
    one device) read back together: one submit and one mapping instead of one per tensor."""
    gpu = [i for i, t in enumerate(tensors) if hasattr(t, "data_sync")]
    gdev = getattr(tensors[gpu[0]], "gdev", None) if gpu else None
    if len(gpu) < 2 or gdev is None or any(getattr(tensors[i], "gdev", None) is not gdev for i in gpu):
        return [host_array(t) for t in tensors]
    from gpulite.backends.webgpu.pipeline.common import read_back

    raws = read_back(gdev, [(tensors[i].buffer, tensors[i].offset, tensors[i].nbytes) for i in gpu], "host_arrays")
    out = list(tensors)
    for i, raw in zip(gpu, raws, strict=True):
        out[i] = raw.view(tensors[i].dtype).reshape(tensors[i].shape)
    return out


@dataclass(frozen=True)
class RelativeBox:
    """An axis-aligned box in relative coordinates (MediaPipe ``RelativeBoundingBox``)."""

    xmin: float
    ymin: float
    width: float
    height: float

    @property
    def xmax(self) -> float:
        return self.xmin + self.width

    @property
    def ymax(self) -> float:
        return self.ymin + self.height

    @property
    def area(self) -> float:
        return max(self.width, 0.0) * max(self.height, 0.0)

    def intersection(self, other: RelativeBox) -> float:
        w = min(self.xmax, other.xmax) - max(self.xmin, other.xmin)
        h = min(self.ymax, other.ymax) - max(self.ymin, other.ymin)
        return w * h if w > 0 and h > 0 else 0.0

    def iou(self, other: RelativeBox) -> float:
        """Intersection over union; 0 for disjoint or degenerate boxes."""
        inter = self.intersection(other)
        union = self.area + other.area - inter
        return inter / union if union > 0 else 0.0


@dataclass(frozen=True)
class Detection:
    """One detected object (MediaPipe ``Detection`` with ``RELATIVE_BOUNDING_BOX`` location).

    Attributes
    ----------
    box : RelativeBox
    keypoints : tuple of (x, y)
        Relative keypoints, in the model's order (BlazeFace: right eye, left eye, nose tip,
        mouth centre, right ear tragion, left ear tragion; "right" as seen by the subject).
    score : float
    label_id : int
    """

    box: RelativeBox
    keypoints: tuple[tuple[float, float], ...] = ()
    score: float = 0.0
    label_id: int = 0


@dataclass(frozen=True)
class NormalizedRect:
    """A rotated rectangle in relative coordinates (MediaPipe ``NormalizedRect``).

    ``rotation`` is in radians, clockwise in image coordinates (y down), about the centre.
    """

    x_center: float
    y_center: float
    width: float
    height: float
    rotation: float = 0.0

    @classmethod
    def full_image(cls) -> NormalizedRect:
        return cls(0.5, 0.5, 1.0, 1.0, 0.0)


@dataclass(frozen=True)
class NormalizedLandmark:
    """One landmark: x, y relative to the image; z in the same scale as x (MediaPipe's)."""

    x: float
    y: float
    z: float = 0.0
    visibility: float | None = None
    presence: float | None = None


def points_from_columns(make: Any, xyz: np.ndarray, visibility: Any, presence: Any) -> tuple[Any, ...]:
    """``make(x, y, z, visibility, presence)`` per landmark, from (N, 3) ``xyz`` and optional
    per-landmark ``visibility`` / ``presence`` columns (None, or N values with None inside): the
    per-point objects of a :class:`LandmarkList` (or of a solution's result list) built from arrays."""
    n = len(xyz)
    vis = [None] * n if visibility is None else visibility
    pres = [None] * n if presence is None else presence
    return tuple(make(x, y, z, None if v is None else float(v), None if p is None else float(p))
                 for (x, y, z), v, p in zip(np.asarray(xyz).tolist(), vis, pres, strict=True))


class LandmarkList:
    """Landmarks of one object; ``array()`` gives them as an (N, 3) float32 array.

    Made from :class:`NormalizedLandmark` objects, or (the decoders' fast path) from arrays by
    :meth:`from_arrays`, in which case the per-point objects of ``landmarks`` are built only when
    something asks for them. Either way it compares, hashes and reads the same, and never changes.
    """

    __slots__ = ("_points", "_presence", "_visibility", "_xyz")
    _points: tuple[NormalizedLandmark, ...] | None
    _xyz: np.ndarray | None
    _visibility: Any
    _presence: Any

    def __init__(self, landmarks: tuple[NormalizedLandmark, ...] = ()) -> None:
        self._set(tuple(landmarks), None, None, None)

    def _set(self, points: tuple[NormalizedLandmark, ...] | None, xyz: np.ndarray | None, visibility: Any,
             presence: Any) -> None:
        for name, value in (("_points", points), ("_xyz", xyz), ("_visibility", visibility), ("_presence", presence)):
            object.__setattr__(self, name, value)

    @classmethod
    def from_arrays(cls, xyz: np.ndarray, visibility: Any = None, presence: Any = None) -> LandmarkList:
        """From an (N, 3) array of x, y, z and optional per-landmark visibility / presence (N values, or None)."""
        a = np.array(xyz, np.float64).reshape(-1, 3)
        a.setflags(write=False)
        for name, column in (("visibility", visibility), ("presence", presence)):
            if column is not None and len(column) != len(a):
                raise ValueError(f"LandmarkList: {len(a)} landmarks but {len(column)} {name} values")
        out = cls.__new__(cls)
        out._set(None, a, visibility, presence)
        return out

    @property
    def landmarks(self) -> tuple[NormalizedLandmark, ...]:
        points = self._points
        if points is None:
            assert self._xyz is not None
            points = points_from_columns(NormalizedLandmark, self._xyz, self._visibility, self._presence)
            object.__setattr__(self, "_points", points)  # the one lazy fill-in of an immutable value
        return points

    def columns(self) -> tuple[np.ndarray, Any, Any]:
        """(xyz float64 (N, 3), visibility, presence): each of the last two None or N values (None inside)."""
        if self._xyz is not None:
            return self._xyz, self._visibility, self._presence
        pts = self.landmarks
        xyz = np.array([(p.x, p.y, p.z) for p in pts], np.float64).reshape(-1, 3)
        vis = None if all(p.visibility is None for p in pts) else tuple(p.visibility for p in pts)
        pres = None if all(p.presence is None for p in pts) else tuple(p.presence for p in pts)
        return xyz, vis, pres

    def __len__(self) -> int:
        return len(self._xyz) if self._xyz is not None else len(self.landmarks)

    def __getitem__(self, i: int) -> NormalizedLandmark:
        return self.landmarks[i]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LandmarkList) and self.landmarks == other.landmarks

    def __hash__(self) -> int:
        return hash(self.landmarks)

    def __repr__(self) -> str:
        return f"LandmarkList(landmarks={self.landmarks!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"LandmarkList is immutable; cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return LandmarkList, (self.landmarks,)

    def array(self) -> np.ndarray:
        if self._xyz is not None:
            return self._xyz.astype(np.float32)
        return np.array([(p.x, p.y, p.z) for p in self.landmarks], np.float32).reshape(-1, 3)


@dataclass(frozen=True)
class ImageTransform:
    """How a model input tensor maps back onto the image it was cut from.

    ``matrix`` (3x3, float64) maps relative tensor coordinates (u, v, 1), u and v in [0, 1]
    over the whole tensor, letterbox padding included, to relative image coordinates
    (MediaPipe's ``MATRIX`` output of ImageToTensorCalculator, as a 2-D homogeneous matrix).
    ``padding`` is the letterbox padding (left, top, right, bottom) as fractions of the
    tensor; ``image_size`` and ``tensor_size`` are (width, height) in pixels.
    """

    matrix: np.ndarray = field(repr=False)
    padding: tuple[float, float, float, float]
    image_size: tuple[int, int]
    tensor_size: tuple[int, int]

    def apply(self, points: np.ndarray) -> np.ndarray:
        """Map (N, 2) relative tensor points to relative image points."""
        pts = np.asarray(points, np.float64).reshape(-1, 2)
        m = self.matrix
        return np.stack([pts[:, 0] * m[0, 0] + pts[:, 1] * m[0, 1] + m[0, 2],
                         pts[:, 0] * m[1, 0] + pts[:, 1] * m[1, 1] + m[1, 2]], axis=1)


class Segmentation:
    """A mask: float32 (H, W) in [0, 1], in image pixels (MediaPipe's segmentation mask).

    ``Segmentation(mask)`` holds an array. ``Segmentation.deferred(make, gpu, shape)`` (webgpu)
    holds the model's output on the GPU (``gpu``, a tensor with ``buffer``/``offset``/``shape``)
    and makes the array on the first read of :attr:`mask` (``make()``: read back, activation,
    resize), so a mask nobody reads never comes back to the CPU.
    """

    __slots__ = ("_make", "_mask", "_shape", "activation", "gpu")

    def __init__(self, mask: np.ndarray) -> None:
        self._mask: np.ndarray | None = mask
        self._make: Any = None
        self._shape = tuple(mask.shape[:2])
        self.gpu: Any = None
        self.activation = "none"

    @classmethod
    def deferred(cls, make: Any, gpu: Any, shape: tuple[int, int], activation: str = "none") -> Segmentation:
        """A mask made by ``make()`` on first read; ``gpu`` is the tensor it comes from, ``shape`` (H, W);
        ``activation``: what ``gpu``'s values still need to be the mask's ("none", "sigmoid", "softmax")."""
        seg = cls.__new__(cls)
        seg._mask, seg._make, seg._shape, seg.gpu = None, make, (int(shape[0]), int(shape[1])), gpu
        seg.activation = activation
        return seg

    @property
    def on_gpu(self) -> bool:
        """Whether the mask is a GPU tensor not read yet (``gpu`` holds it at the mask's own size)."""
        return self._mask is None and self.gpu is not None and tuple(self.gpu.shape[-3:-1]) == self._shape

    @property
    def mask(self) -> np.ndarray:
        if self._mask is None:
            self._mask, self._make = self._make(), None
        return self._mask

    @property
    def on_host(self) -> bool:
        """Whether the mask is on the CPU already (read, or never on the GPU)."""
        return self._mask is not None

    @property
    def shape(self) -> tuple[int, int]:
        return self._shape  # type: ignore[return-value]

    def __repr__(self) -> str:
        return f"Segmentation(shape={self._shape}, {'on the host' if self.on_host else 'on the GPU'})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled (and deep-copied) as the host mask: a GPU tensor does not leave its process."""
        return Segmentation, (self.mask,)


def rect_corners(rect: NormalizedRect, width: float = 1.0, height: float = 1.0) -> np.ndarray:
    """The four corners of a rotated rect, in the units of ``width``/``height`` (4, 2)."""
    c, s = math.cos(rect.rotation), math.sin(rect.rotation)
    cx, cy = rect.x_center * width, rect.y_center * height
    hw, hh = rect.width * width / 2, rect.height * height / 2
    local = np.array([(-hw, -hh), (hw, -hh), (hw, hh), (-hw, hh)], np.float64)
    return np.stack([cx + local[:, 0] * c - local[:, 1] * s, cy + local[:, 0] * s + local[:, 1] * c], axis=1)
