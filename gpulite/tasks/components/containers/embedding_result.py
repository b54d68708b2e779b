"""``Embedding`` and ``EmbeddingResult`` (MediaPipe Tasks' ``containers.embedding_result``)."""

import dataclasses

import numpy as np


@dataclasses.dataclass
class Embedding:
    """One head's feature vector (float32, or uint8 when quantized).

    Attributes
    ----------
    embedding : numpy.ndarray
    head_index : int, optional
    head_name : str, optional
    """

    embedding: np.ndarray
    head_index: int | None = None
    head_name: str | None = None


@dataclasses.dataclass
class EmbeddingResult:
    """What an embedder gives for one image: one :class:`Embedding` per head.

    Attributes
    ----------
    embeddings : list of Embedding
    timestamp_ms : int, optional
    """

    embeddings: list[Embedding]
    timestamp_ms: int | None = None
