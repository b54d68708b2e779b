"""MediaPipe Tasks' ``vision.drawing_styles``: the default drawing specs, the legacy ones
(:mod:`gpulite.solutions.drawing_styles`: the same colours, thicknesses and radii in mediapipe
1.2.2's Tasks module), keyed by landmark index and by ``(start, end)`` pairs."""

from gpulite.solutions.drawing_styles import (
    get_default_face_mesh_contours_style,
    get_default_face_mesh_iris_connections_style,
    get_default_face_mesh_tesselation_style,
    get_default_hand_connections_style,
    get_default_hand_landmarks_style,
    get_default_pose_landmarks_style,
)

__all__ = ["get_default_face_mesh_contours_style", "get_default_face_mesh_iris_connections_style",
           "get_default_face_mesh_tesselation_style", "get_default_hand_connections_style",
           "get_default_hand_landmarks_style", "get_default_pose_landmarks_style"]
