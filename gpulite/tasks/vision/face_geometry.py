"""The face transform of MediaPipe's face geometry pipeline (``facial_transformation_matrixes``).

``geometry_pipeline_metadata_landmarks.binarypb`` (in ``face_landmarker.task``) is a
``GeometryPipelineMetadata`` protobuf: the canonical face mesh (468 vertices, metric units) and
the weighted landmarks the fit uses. For each face, MediaPipe's ``GeometryPipeline`` (with the
Tasks' default environment: a perspective camera with a 63° vertical field of view, near plane
1, origin at the image's top-left corner) turns the first 468 landmarks into metric 3D points
(projected onto the near plane, depth rescaled in two passes of the fit) and returns the
similarity transform (scale x rotation, translation) that maps the canonical face onto them,
found by a weighted orthogonal Procrustes fit. This module does the same in numpy.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np

from gpulite.errors import GpuliteError

VERTICAL_FOV_DEGREES = 63.0
NEAR = 1.0
MESH_POINTS = 468


class GeometryMetadataError(GpuliteError, ValueError):
    """The geometry pipeline metadata is not the protobuf MediaPipe's face landmarker ships."""


def _fields(data: bytes) -> list[tuple[int, int, object]]:
    """A protobuf message's (field number, wire type, value) triples: varints as int, length-delimited as bytes,
    32-bit as bytes."""
    out, i = [], 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            n, i = _varint(data, i)
            if i + n > len(data):
                raise GeometryMetadataError(f"a field runs past the end ({i + n} > {len(data)} bytes)")
            value, i = data[i:i + n], i + n
        elif wire == 5:
            value, i = data[i:i + 4], i + 4
        elif wire == 1:
            value, i = data[i:i + 8], i + 8
        else:
            raise GeometryMetadataError(f"unsupported protobuf wire type {wire} (field {number})")
        out.append((number, wire, value))
    return out


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        if i >= len(data) or shift > 63:
            raise GeometryMetadataError("a varint runs past the end of the metadata")
        b = data[i]
        i += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, i
        shift += 7


def _floats(fields, number: int) -> np.ndarray:
    values = []
    for n, wire, v in fields:
        if n == number:
            if wire == 2:
                values.extend(struct.unpack(f"<{len(v) // 4}f", v[: len(v) // 4 * 4]))
            elif wire == 5:
                values.append(struct.unpack("<f", v)[0])
    return np.array(values, np.float64)


@dataclass(frozen=True)
class GeometryPipeline:
    """The canonical face (``canonical``: (468, 3)) and the fit's per-landmark weights (468,)."""

    canonical: np.ndarray
    weights: np.ndarray

    @classmethod
    def from_metadata(cls, data: bytes) -> GeometryPipeline:
        """Read ``geometry_pipeline_metadata_landmarks.binarypb``.

        Raises
        ------
        GeometryMetadataError
            Malformed, or not a 468-vertex VERTEX_PT mesh with landmark weights.
        """
        top = _fields(bytes(data))
        meshes = [v for n, w, v in top if n == 1 and w == 2]
        if not meshes:
            raise GeometryMetadataError("the geometry metadata has no canonical_mesh")
        mesh = _fields(meshes[0])
        vertex_type = next((v for n, w, v in mesh if n == 1 and w == 0), 0)
        if vertex_type != 0:  # VERTEX_PT: x, y, z, u, v
            raise GeometryMetadataError(f"canonical_mesh.vertex_type {vertex_type} (expected VERTEX_PT, 0)")
        vertices = _floats(mesh, 3)
        if vertices.size != MESH_POINTS * 5:
            raise GeometryMetadataError(f"canonical_mesh has {vertices.size} vertex values, expected {MESH_POINTS * 5}")
        weights = np.zeros(MESH_POINTS, np.float64)
        for n, w, v in top:
            if n == 2 and w == 2:
                ref = {k: val for k, _, val in _fields(v)}
                lid = int(ref.get(1, 0))
                if not 0 <= lid < MESH_POINTS:
                    raise GeometryMetadataError(f"procrustes landmark id {lid} is outside the mesh")
                weights[lid] = struct.unpack("<f", ref[2])[0] if 2 in ref else 0.0
        if not weights.any():
            raise GeometryMetadataError("the geometry metadata has no procrustes_landmark_basis")
        return cls(vertices.reshape(MESH_POINTS, 5)[:, :3].copy(), weights)

    def transform(self, landmarks: np.ndarray, width: int, height: int) -> np.ndarray:
        """The 4x4 float32 transform from the canonical face to the face of ``landmarks`` ((N >= 468, 3),
        normalised), in an image of ``width`` x ``height``."""
        height_at_near = 2.0 * NEAR * math.tan(0.5 * math.radians(VERTICAL_FOV_DEGREES))
        width_at_near = width * height_at_near / height
        left, bottom = -0.5 * width_at_near, -0.5 * height_at_near
        pts = np.array(landmarks[:MESH_POINTS], np.float64)
        pts[:, 1] = 1.0 - pts[:, 1]                         # origin at the top-left corner
        pts[:, 0] = pts[:, 0] * width_at_near + left         # onto the near plane
        pts[:, 1] = pts[:, 1] * height_at_near + bottom
        pts[:, 2] = pts[:, 2] * width_at_near
        depth_offset = pts[:, 2].mean()

        first = pts.copy()
        first[:, 2] *= -1.0
        scale1 = self._scale(first)
        second = self._to_metric(pts, depth_offset, scale1)
        scale2 = self._scale(second)
        metric = self._to_metric(pts, depth_offset, scale1 * scale2)
        return procrustes(self.canonical, metric, self.weights).astype(np.float32)

    def _scale(self, points: np.ndarray) -> float:
        return float(np.linalg.norm(procrustes(self.canonical, points, self.weights)[:3, 0]))

    @staticmethod
    def _to_metric(pts: np.ndarray, depth_offset: float, scale: float) -> np.ndarray:
        out = pts.copy()
        out[:, 2] = (out[:, 2] - depth_offset + NEAR) / scale
        out[:, :2] *= out[:, 2:3] / NEAR
        out[:, 2] *= -1.0
        return out


def procrustes(source: np.ndarray, target: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """The 4x4 similarity transform (scale x rotation, translation) taking ``source`` (N, 3) to ``target``
    (N, 3) in the weighted least-squares sense (MediaPipe's ``SolveWeightedOrthogonalProblem``)."""
    s, t = source.T, target.T
    sqrt_w = np.sqrt(weights)
    total = float(np.sum(weights))
    ws, wt = s * sqrt_w, t * sqrt_w
    center = (s * weights).sum(axis=1) / total
    centered = ws - np.outer(center, sqrt_w)
    u, _, vt = np.linalg.svd(wt @ centered.T)
    if np.linalg.det(u) * np.linalg.det(vt) < 0:
        u[:, 2] *= -1.0
    rotation = u @ vt
    scale = float(np.sum((rotation @ centered) * wt) / np.sum(centered * ws))
    rs = scale * rotation
    translation = ((wt - rs @ ws) * sqrt_w).sum(axis=1) / total
    out = np.eye(4)
    out[:3, :3], out[:3, 3] = rs, translation
    return out
