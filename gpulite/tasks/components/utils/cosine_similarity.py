"""``cosine_similarity(u, v)`` of two ``Embedding``s (``mediapipe.tasks.python.components.utils``)."""

from __future__ import annotations

import numpy as np

from gpulite.tasks.components.containers.embedding_result import Embedding


def cosine_similarity(u: Embedding, v: Embedding) -> float:
    """Cosine similarity of two embeddings, as MediaPipe's ``cosine_similarity`` (and its errors:
    ``ValueError`` for different sizes, a float with a quantized one, empty or zero-norm vectors)."""
    if len(u.embedding) != len(v.embedding):
        raise ValueError(f"Cannot compute cosine similarity between embeddings of different sizes "
                         f"({len(u.embedding)} vs. {len(v.embedding)}).")
    a, b = np.asarray(u.embedding), np.asarray(v.embedding)
    if a.dtype.kind == "f" and b.dtype.kind == "f":
        return _cosine(a.astype(float), b.astype(float))
    if a.dtype == np.uint8 and b.dtype == np.uint8:
        return _cosine(a.view(np.int8).astype(float), b.view(np.int8).astype(float))
    raise ValueError("Cannot compute cosine similarity between quantized and float embeddings.")


def _cosine(u: np.ndarray, v: np.ndarray) -> float:
    if len(u) <= 0:
        raise ValueError("Cannot compute cosing similarity on empty embeddings.")
    nu, nv = np.linalg.norm(u), np.linalg.norm(v)
    if nu <= 0 or nv <= 0:
        raise ValueError("Cannot compute cosine similarity on embedding with 0 norm.")
    return float(u.dot(v) / (nu * nv))
