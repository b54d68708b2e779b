"""MediaPipe's ``mp.solutions.drawing_styles``: the drawing specs MediaPipe's samples draw with.

Each function returns what mediapipe 0.10.14's does, with the same colours, thicknesses and
radii (tests/solutions/test_mediapipe_api.py compares them, and the pixels drawn with them)::

    import gpulite as mp                       # was: import mediapipe as mp
    mp_drawing, mp_styles, mp_hands = mp.solutions.drawing_utils, mp.solutions.drawing_styles, mp.solutions.hands

    for lms in results.multi_hand_landmarks or []:
        mp_drawing.draw_landmarks(image, lms, mp_hands.HAND_CONNECTIONS,
                                  mp_styles.get_default_hand_landmarks_style(),
                                  mp_styles.get_default_hand_connections_style())

Colours are BGR, as MediaPipe's, for OpenCV images. The per-landmark and per-connection styles
are dicts (landmark index or connection -> :class:`~gpulite.solutions.drawing_utils.DrawingSpec`),
new on every call.
"""

from __future__ import annotations

from collections.abc import Iterable

from gpulite.solutions.connections import (
    FACEMESH_FACE_OVAL,
    FACEMESH_LEFT_EYE,
    FACEMESH_LEFT_EYEBROW,
    FACEMESH_LEFT_IRIS,
    FACEMESH_LIPS,
    FACEMESH_NOSE,
    FACEMESH_RIGHT_EYE,
    FACEMESH_RIGHT_EYEBROW,
    FACEMESH_RIGHT_IRIS,
    HAND_INDEX_FINGER_CONNECTIONS,
    HAND_MIDDLE_FINGER_CONNECTIONS,
    HAND_PALM_CONNECTIONS,
    HAND_PINKY_FINGER_CONNECTIONS,
    HAND_RING_FINGER_CONNECTIONS,
    HAND_THUMB_CONNECTIONS,
    HandLandmark,
    PoseLandmark,
)
from gpulite.solutions.drawing_utils import DrawingSpec

__all__ = [
    "get_default_face_mesh_contours_style", "get_default_face_mesh_iris_connections_style",
    "get_default_face_mesh_tesselation_style", "get_default_hand_connections_style",
    "get_default_hand_landmarks_style", "get_default_pose_landmarks_style",
]

# MediaPipe's palette (BGR)
_RED = (48, 48, 255)
_GREEN = (48, 255, 48)
_BLUE = (192, 101, 21)
_YELLOW = (0, 204, 255)
_GRAY = (128, 128, 128)
_PURPLE = (128, 64, 128)
_PEACH = (180, 229, 255)
_WHITE = (224, 224, 224)
_CYAN = (192, 255, 48)
_MAGENTA = (192, 48, 255)
_POSE_LEFT = (0, 138, 255)
_POSE_RIGHT = (231, 217, 0)

_FILLED = -1          # OpenCV's thickness for a filled circle
_HAND_DOT_RADIUS = 5


def _spread(groups: Iterable[tuple[Iterable, DrawingSpec]]) -> dict:
    """{member: spec} for each (members, spec) group."""
    return {member: spec for members, spec in groups for member in members}


def _finger(name: str) -> tuple[HandLandmark, ...]:
    return tuple(HandLandmark[f"{name}_{joint}"] for joint in ("PIP", "DIP", "TIP"))


def get_default_hand_landmarks_style() -> dict[int, DrawingSpec]:
    """Landmark index -> spec: filled dots of radius 5, palm red, each finger its own colour."""
    h = HandLandmark
    palm = (h.WRIST, h.THUMB_CMC, h.INDEX_FINGER_MCP, h.MIDDLE_FINGER_MCP, h.RING_FINGER_MCP, h.PINKY_MCP)
    thumb = (h.THUMB_MCP, h.THUMB_IP, h.THUMB_TIP)
    groups = [(palm, _RED), (thumb, _PEACH), (_finger("INDEX_FINGER"), _PURPLE),
              (_finger("MIDDLE_FINGER"), _YELLOW), (_finger("RING_FINGER"), _GREEN), (_finger("PINKY"), _BLUE)]
    return _spread((members, DrawingSpec(color=color, thickness=_FILLED, circle_radius=_HAND_DOT_RADIUS))
                   for members, color in groups)


def get_default_hand_connections_style() -> dict[tuple[int, int], DrawingSpec]:
    """Connection -> spec: the palm grey and 3 px, each finger its landmarks' colour and 2 px."""
    return _spread([
        (HAND_PALM_CONNECTIONS, DrawingSpec(color=_GRAY, thickness=3)),
        (HAND_THUMB_CONNECTIONS, DrawingSpec(color=_PEACH, thickness=2)),
        (HAND_INDEX_FINGER_CONNECTIONS, DrawingSpec(color=_PURPLE, thickness=2)),
        (HAND_MIDDLE_FINGER_CONNECTIONS, DrawingSpec(color=_YELLOW, thickness=2)),
        (HAND_RING_FINGER_CONNECTIONS, DrawingSpec(color=_GREEN, thickness=2)),
        (HAND_PINKY_FINGER_CONNECTIONS, DrawingSpec(color=_BLUE, thickness=2)),
    ])


def get_default_face_mesh_contours_style(i: int = 0) -> dict[tuple[int, int], DrawingSpec]:
    """Connection -> spec for ``FACEMESH_CONTOURS``, all 2 px.

    ``i=0``: lips and face oval white, the person's left eye and eyebrow green, right ones red.
    ``i=1`` (MediaPipe's second style): lips blue, left eye cyan, left eyebrow green, right eye
    magenta, right eyebrow red, oval white, and the nose (``FACEMESH_NOSE``) yellow.

    Raises
    ------
    ValueError
        ``i`` is not 0 or 1 (MediaPipe takes any other value as 0).
    """
    if isinstance(i, bool) or i not in (0, 1):
        raise ValueError(f"get_default_face_mesh_contours_style: i must be 0 or 1 (MediaPipe's two styles), got {i!r}")
    if i == 0:
        colors = [(FACEMESH_LIPS, _WHITE), (FACEMESH_LEFT_EYE, _GREEN), (FACEMESH_LEFT_EYEBROW, _GREEN),
                  (FACEMESH_RIGHT_EYE, _RED), (FACEMESH_RIGHT_EYEBROW, _RED), (FACEMESH_FACE_OVAL, _WHITE)]
    else:
        colors = [(FACEMESH_LIPS, _BLUE), (FACEMESH_LEFT_EYE, _CYAN), (FACEMESH_LEFT_EYEBROW, _GREEN),
                  (FACEMESH_RIGHT_EYE, _MAGENTA), (FACEMESH_RIGHT_EYEBROW, _RED), (FACEMESH_FACE_OVAL, _WHITE),
                  (FACEMESH_NOSE, _YELLOW)]
    return _spread((members, DrawingSpec(color=color, thickness=2)) for members, color in colors)


def get_default_face_mesh_tesselation_style() -> DrawingSpec:
    """One spec for every ``FACEMESH_TESSELATION`` connection: grey, 1 px."""
    return DrawingSpec(color=_GRAY, thickness=1)


def get_default_face_mesh_iris_connections_style() -> dict[tuple[int, int], DrawingSpec]:
    """Connection -> spec for ``FACEMESH_IRISES``: the left iris green, the right red, 2 px."""
    return _spread([(FACEMESH_LEFT_IRIS, DrawingSpec(color=_GREEN, thickness=2)),
                    (FACEMESH_RIGHT_IRIS, DrawingSpec(color=_RED, thickness=2))])


def get_default_pose_landmarks_style() -> dict[int, DrawingSpec]:
    """Landmark index -> spec, 2 px: the person's left side orange, the right side cyan, the nose white."""
    left = [m for m in PoseLandmark if m.name.startswith(("LEFT_", "MOUTH_LEFT"))]
    right = [m for m in PoseLandmark if m.name.startswith(("RIGHT_", "MOUTH_RIGHT"))]
    return _spread([(left, DrawingSpec(color=_POSE_LEFT, thickness=2)),
                    (right, DrawingSpec(color=_POSE_RIGHT, thickness=2)),
                    ([PoseLandmark.NOSE], DrawingSpec(color=_WHITE, thickness=2))])
