"""Result types of the solutions, shaped like MediaPipe's so code can switch with few changes.

MediaPipe's Python solutions return protobuf messages; gpulite returns frozen dataclasses with
the same attribute names where MediaPipe has them:

==============================================  ==============================================
MediaPipe                                        gpulite
==============================================  ==============================================
``d.location_data.relative_bounding_box.xmin``  same, or ``d.relative_bounding_box.xmin``
``d.location_data.relative_keypoints[i].x``     same, or ``d.keypoints[i].x``
``d.score[0]``                                   same (:class:`Score`: a float that also indexes)
``lms.landmark[i].x`` / ``.y`` / ``.z``          same (``lms[i]`` and ``len(lms)`` work too)
``h.classification[0].label``                    same (:class:`ClassificationList`)
``lm.HasField("visibility")``                    same: each result type answers ``HasField`` as
                                                 MediaPipe's message answers it
``results.pose_world_landmarks.landmark[i]``     a :class:`Landmark` (metres), as MediaPipe's
==============================================  ==============================================

Everything is in *normalised* image coordinates (x from the left edge, y from the top, both
in [0, 1] inside the image; landmark z in roughly the scale of x) except where a name says
``pixel``. :meth:`LandmarkList.pixels`, :meth:`NormalizedLandmark.to_pixel`,
:meth:`RelativeBoundingBox.to_pixels` convert.

Usage::

    from gpulite.solutions import FaceMesh
    with FaceMesh(refine_landmarks=True) as mesh:
        result = mesh.process(rgb)                      # HxWx3 uint8, RGB
    for face in result.multi_face_landmarks or []:
        nose = face.landmark[1]
        print(nose.x, nose.y, nose.z, nose.to_pixel(rgb.shape[1], rgb.shape[0]))
        xy = face.pixels(rgb.shape[1], rgb.shape[0])   # (N, 2) int pixel coordinates
        xyz = face.array()                               # (N, 3) float32 normalised

``NormalizedRect`` (a rotated ROI: ``x_center``, ``y_center``, ``width``, ``height``,
``rotation`` in radians) is the pipeline's own type, re-exported here.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar

import numpy as np

from gpulite.pipeline.calculators import types as ptypes
from gpulite.pipeline.calculators.types import NormalizedRect

__all__ = [
    "Classification", "ClassificationList", "Detection", "FaceDetectionResult", "FaceMeshResult", "Keypoint",
    "Landmark", "LandmarkList", "LocationData", "NormalizedLandmark", "NormalizedRect", "RelativeBoundingBox", "Score",
    "WorldLandmarkList",
]


def _pixel(x: float, y: float, width: int, height: int) -> tuple[int, int]:
    """Normalised (x, y) -> integer pixel (clamped to the image), as MediaPipe's drawing utils do."""
    return (min(int(np.floor(x * width)), width - 1) if x >= 0 else 0,
            min(int(np.floor(y * height)), height - 1) if y >= 0 else 0)


class _Message:
    """Protobuf-style ``HasField``, answered as MediaPipe's message of the same kind answers it.

    ``_FIELDS`` names every field of MediaPipe's message (``_PROTO``) and how gpulite holds it:
    ``"value"`` (set unless None or empty), ``"unset"`` (a field gpulite never fills), or
    ``"repeated"`` (a list: protobuf has no presence for it and raises, so this does too).
    """

    __slots__ = ()
    _PROTO: ClassVar[str]
    _FIELDS: ClassVar[Mapping[str, str]]

    def HasField(self, field_name: str) -> bool:  # noqa: N802  (protobuf's name)
        """Whether the field is set, e.g. a landmark's ``"visibility"`` (protobuf's ``Message.HasField``).

        Raises
        ------
        ValueError
            MediaPipe's message has no such field, or it is a repeated one (as protobuf raises).
        """
        kind = self._FIELDS.get(field_name)
        if kind is None:
            raise ValueError(f'Protocol message {self._PROTO} has no "{field_name}" field.')
        if kind == "repeated":
            raise ValueError(f"Field mediapipe.{self._PROTO}.{field_name} does not have presence.")
        value = getattr(self, field_name) if kind == "value" else None
        return value is not None and value != ""


def _fields(value: str = "", *, unset: str = "", repeated: str = "") -> Mapping[str, str]:
    """A ``_Message._FIELDS`` table from space-separated field names."""
    return MappingProxyType({**dict.fromkeys(value.split(), "value"), **dict.fromkeys(unset.split(), "unset"),
                             **dict.fromkeys(repeated.split(), "repeated")})


_POINT_FIELDS = _fields("x y z visibility presence")


class Score(float):
    """A detection score: a float that also reads as MediaPipe's one-element repeated field.

    ``d.score > 0.5``, ``f"{d.score:.2f}"`` and ``d.score[0]``, ``len(d.score)``,
    ``list(d.score)`` all work, so code written for either library reads it.

    Examples
    --------
    >>> s = Score(0.93)
    >>> s[0], len(s), list(s), s + 0
    (0.93, 1, [0.93], 0.93)
    """

    __slots__ = ()

    def __getitem__(self, index: int | slice) -> Any:
        return [float(self)][index]

    def __len__(self) -> int:
        return 1

    def __iter__(self) -> Iterator[float]:
        yield float(self)


@dataclass(frozen=True)
class RelativeBoundingBox(_Message, ptypes.RelativeBox):
    """An axis-aligned box, normalised to the image (MediaPipe ``RelativeBoundingBox``).

    The pipeline's :class:`~gpulite.pipeline.calculators.types.RelativeBox` (``xmin``, ``ymin``,
    ``width``, ``height``, ``xmax``, ``ymax``, ``area``, ``iou``) under MediaPipe's name, plus
    pixel conversion.
    """

    _PROTO = "LocationData.RelativeBoundingBox"
    _FIELDS = _fields("xmin ymin width height")

    def to_pixels(self, width: int, height: int) -> tuple[int, int, int, int]:
        """``(x0, y0, x1, y1)`` in pixels of a ``width`` x ``height`` image (not clamped)."""
        return (round(self.xmin * width), round(self.ymin * height),
                round(self.xmax * width), round(self.ymax * height))


@dataclass(frozen=True)
class Keypoint(_Message):
    """A normalised keypoint (MediaPipe ``RelativeKeypoint``)."""

    _PROTO = "LocationData.RelativeKeypoint"
    _FIELDS = _fields("x y", unset="keypoint_label score")

    x: float
    y: float

    def to_pixel(self, width: int, height: int) -> tuple[int, int]:
        return _pixel(self.x, self.y, width, height)


@dataclass(frozen=True)
class LocationData(_Message):
    """MediaPipe's ``LocationData`` view of a detection (``relative_bounding_box``, ``relative_keypoints``)."""

    _PROTO = "LocationData"
    _FIELDS = _fields("format relative_bounding_box", unset="bounding_box mask", repeated="relative_keypoints")
    RELATIVE_BOUNDING_BOX: ClassVar[int] = 2        # MediaPipe's LocationData.Format value
    format: ClassVar[int] = RELATIVE_BOUNDING_BOX   # what MediaPipe's solutions set (drawing checks it)

    relative_bounding_box: RelativeBoundingBox
    relative_keypoints: tuple[Keypoint, ...]


@dataclass(frozen=True)
class Detection(_Message):
    """One detection: box, keypoints and score, normalised to the image.

    Attributes
    ----------
    relative_bounding_box : RelativeBoundingBox
    keypoints : tuple of Keypoint
        BlazeFace order: right eye, left eye, nose tip, mouth centre, right ear tragion, left
        ear tragion ("right" as seen by the subject; :class:`gpulite.solutions.connections.FaceKeyPoint`).
    score : Score
        A float; ``score[0]`` reads it as MediaPipe's repeated field does.
    label_id : int

    Examples
    --------
    >>> d.relative_bounding_box.xmin, d.keypoints[2].x, d.score
    >>> d.location_data.relative_bounding_box.width, d.score[0]      # MediaPipe's spelling works too
    """

    _PROTO = "Detection"
    _FIELDS = _fields("location_data", unset="feature_tag track_id detection_id timestamp_usec",
                      repeated="label label_id score associated_detections display_name")

    relative_bounding_box: RelativeBoundingBox
    keypoints: tuple[Keypoint, ...] = ()
    score: float = 0.0
    label_id: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "score", Score(self.score))

    @property
    def location_data(self) -> LocationData:
        return LocationData(self.relative_bounding_box, self.keypoints)

    @property
    def score_list(self) -> list[float]:
        """``[score]``: MediaPipe's ``detection.score`` is a repeated field."""
        return [self.score]

    @classmethod
    def from_pipeline(cls, d: ptypes.Detection) -> Detection:
        """From the pipeline's :class:`gpulite.pipeline.calculators.types.Detection`."""
        b = d.box
        return cls(RelativeBoundingBox(float(b.xmin), float(b.ymin), float(b.width), float(b.height)),
                   tuple(Keypoint(float(x), float(y)) for x, y in d.keypoints), float(d.score), int(d.label_id))


@dataclass(frozen=True)
class NormalizedLandmark(_Message):
    """One image landmark (MediaPipe ``NormalizedLandmark``): x, y normalised; z roughly in x's scale.

    ``visibility`` and ``presence`` are None where the model does not give them (face mesh,
    hands), and ``HasField`` says False for them there, as MediaPipe's does.
    """

    _PROTO = "NormalizedLandmark"
    _FIELDS = _POINT_FIELDS

    x: float
    y: float
    z: float = 0.0
    visibility: float | None = None
    presence: float | None = None

    def to_pixel(self, width: int, height: int) -> tuple[int, int]:
        """Integer pixel coordinates in a ``width`` x ``height`` image (clamped to it)."""
        return _pixel(self.x, self.y, width, height)


@dataclass(frozen=True)
class Landmark(_Message):
    """One world landmark (MediaPipe ``Landmark``): x, y, z in metres, not image units.

    The points of ``pose_world_landmarks`` (origin at the centre between the hips) and
    ``multi_hand_world_landmarks`` (origin at the hand's centre); ``visibility`` / ``presence``
    as for :class:`NormalizedLandmark`.
    """

    _PROTO = "Landmark"
    _FIELDS = _POINT_FIELDS

    x: float
    y: float
    z: float = 0.0
    visibility: float | None = None
    presence: float | None = None


class LandmarkList(_Message):
    """The image landmarks of one object (MediaPipe ``NormalizedLandmarkList``: ``.landmark[i]``).

    A solution's result keeps the pipeline's arrays and builds the per-point objects of
    ``landmark`` only when they are read; ``array()`` and ``pixels()`` never need them.
    It compares, hashes and reads as a tuple of :class:`NormalizedLandmark`, and never changes.
    """

    __slots__ = ("_columns", "_landmark")
    _PROTO = "NormalizedLandmarkList"
    _FIELDS = _fields(repeated="landmark")
    _point: ClassVar[type] = NormalizedLandmark
    _landmark: tuple[NormalizedLandmark, ...] | None
    _columns: Any  # (xyz, visibility, presence) of the pipeline's list, until ``landmark`` is built

    def __init__(self, landmark: Iterable[NormalizedLandmark]) -> None:
        object.__setattr__(self, "_landmark", tuple(landmark))
        object.__setattr__(self, "_columns", None)

    @property
    def landmark(self) -> tuple[NormalizedLandmark, ...]:
        points = self._landmark
        if points is None:
            points = ptypes.points_from_columns(self._point, *self._columns)
            object.__setattr__(self, "_landmark", points)  # the one lazy fill-in of an immutable value
        return points

    def __len__(self) -> int:
        return len(self._columns[0]) if self._landmark is None else len(self._landmark)

    def __getitem__(self, i: int) -> NormalizedLandmark:
        return self.landmark[i]

    def __iter__(self) -> Iterator[NormalizedLandmark]:
        return iter(self.landmark)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LandmarkList) and type(self)._point is type(other)._point \
            and self.landmark == other.landmark

    def __hash__(self) -> int:
        return hash(self.landmark)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(landmark={self.landmark!r})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable; cannot set {name!r}")

    def __reduce__(self) -> tuple[Any, ...]:
        return type(self), (self.landmark,)

    def array(self) -> np.ndarray:
        """(N, 3) float32 array of x, y, z."""
        if self._landmark is None:
            return self._columns[0].astype(np.float32)
        return np.array([(p.x, p.y, p.z) for p in self._landmark], np.float32).reshape(-1, 3)

    def pixels(self, width: int, height: int) -> np.ndarray:
        """(N, 2) int32 pixel coordinates in a ``width`` x ``height`` image (x, y; not clamped)."""
        a = self.array()
        return np.stack([np.floor(a[:, 0] * width), np.floor(a[:, 1] * height)], axis=1).astype(np.int32)

    @classmethod
    def from_array(cls, xyz: np.ndarray, *, visibility: Iterable[float] | None = None,
                   presence: Iterable[float] | None = None) -> LandmarkList:
        """From an (N, 3) array, with optional per-landmark visibility and presence."""
        a = np.asarray(xyz, np.float64).reshape(-1, 3)
        return cls(ptypes.points_from_columns(cls._point, a, None if visibility is None else list(visibility),
                                              None if presence is None else list(presence)))

    @classmethod
    def from_pipeline(cls, lms: ptypes.LandmarkList, *, keep_presence: bool = True) -> LandmarkList:
        """From the pipeline's :class:`gpulite.pipeline.calculators.types.LandmarkList` (presence dropped unless
        ``keep_presence``); the per-point objects come when first read."""
        xyz, vis, pres = lms.columns()
        out = cls.__new__(cls)
        object.__setattr__(out, "_landmark", None)
        object.__setattr__(out, "_columns", (xyz, vis, pres if keep_presence else None))
        return out


class WorldLandmarkList(LandmarkList):
    """The world landmarks of one object (MediaPipe ``LandmarkList``): :class:`Landmark` points, in metres.

    Reads as :class:`LandmarkList` does (``.landmark[i]``, ``array()``), except ``pixels()``:
    metres have no pixels.
    """

    __slots__ = ()
    _PROTO = "LandmarkList"
    _point = Landmark

    def pixels(self, width: int, height: int) -> np.ndarray:
        raise TypeError("world landmarks are in metres, not image coordinates: pixels() needs the image landmarks "
                        "(pose_landmarks, multi_hand_landmarks)")


@dataclass(frozen=True)
class Classification(_Message):
    """One class (MediaPipe ``Classification``), e.g. handedness ``label="Left"``."""

    _PROTO = "Classification"
    _FIELDS = _fields("index score label display_name")

    index: int
    score: float
    label: str = ""
    display_name: str = ""


@dataclass(frozen=True)
class ClassificationList(_Message):
    """MediaPipe ``ClassificationList``: ``.classification[0].label``."""

    _PROTO = "ClassificationList"
    _FIELDS = _fields(repeated="classification")

    classification: tuple[Classification, ...]


@dataclass(frozen=True)
class FaceDetectionResult:
    """What :class:`gpulite.solutions.FaceDetector` returns for one image.

    ``detections`` is None when there is no face, as in MediaPipe (so ``result.detections or []``
    reads the same in both).
    """

    detections: list[Detection] | None
    image_size: tuple[int, int] = (0, 0)          # (width, height)


@dataclass(frozen=True)
class FaceMeshResult:
    """What :class:`gpulite.solutions.FaceMesh` returns for one image.

    ``multi_face_landmarks`` (None when there is no face, as in MediaPipe): 468 landmarks per
    face, 478 with ``refine_landmarks`` (the last ten are the irises). ``face_rects`` are the
    rotated ROIs the landmark model ran on; ``tracked`` says whether this frame's faces came
    from the previous frame's landmarks (True) or from the detector (False).
    """

    multi_face_landmarks: list[LandmarkList] | None
    face_rects: list[NormalizedRect] = field(default_factory=list)
    image_size: tuple[int, int] = (0, 0)          # (width, height)
    tracked: bool = False

    def as_arrays(self) -> list[np.ndarray]:
        """Each face's landmarks as an (N, 3) float32 array."""
        return [f.array() for f in self.multi_face_landmarks or []]


def to_jsonable(value: Any) -> Any:
    """A result as plain dicts/lists/floats (for ``--json``); arrays become lists, or a summary when large."""
    from dataclasses import fields, is_dataclass

    if is_dataclass(value) and not isinstance(value, type):
        out = {f.name: to_jsonable(getattr(value, f.name)) for f in fields(value) if f.repr}
        return out | {k: to_jsonable(getattr(value, k)) for k in getattr(value, "JSON_PROPERTIES", ())}
    if isinstance(value, LandmarkList):
        return {"landmark": to_jsonable(value.landmark)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):  # masks: a summary, not a million numbers
        if value.size <= 64:
            return value.tolist()
        return {"shape": list(value.shape), "dtype": str(value.dtype), "mean": float(value.mean())}
    if isinstance(value, (np.floating, np.integer)):
        return value.item()
    return value
