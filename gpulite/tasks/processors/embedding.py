"""Model outputs -> ``EmbeddingResult``, as MediaPipe's ``EmbeddingPostprocessingGraph``.

One embedding per output tensor (a head, named by its metadata), dequantized; with
``l2_normalize`` divided by its L2 norm; with ``quantize`` scalar-quantized to bytes
(``round(value * 128)`` clamped to [-128, 127], returned as uint8 as MediaPipe's Python does).

Usage::

    post = EmbeddingPostprocessor(image_model, l2_normalize=True, quantize=False)
    result = post(outputs)
"""

from __future__ import annotations

import numpy as np

from gpulite.tasks.components.containers.embedding_result import Embedding, EmbeddingResult
from gpulite.tasks.components.utils.cosine_similarity import cosine_similarity
from gpulite.tasks.image_model import ImageModel, TaskModelError

__all__ = ["EmbeddingPostprocessor", "cosine_similarity"]


class EmbeddingPostprocessor:
    """The embedding heads of an :class:`ImageModel`."""

    def __init__(self, model: ImageModel, *, l2_normalize: bool = False, quantize: bool = False) -> None:
        if len(model.model.subgraphs) != 1:
            raise TaskModelError("Embedding tflite models are assumed to have a single subgraph.")
        sg = model.model.subgraphs[0]
        quantized = 0
        for i, t in enumerate(sg.outputs):
            dtype = sg.tensors[t].dtype
            if dtype not in (np.float32, np.uint8):
                raise TaskModelError(f"Expected output tensor at index {i} to have type UINT8 or FLOAT32, found "
                                     f"{dtype.name.upper()} instead.")
            quantized += dtype == np.uint8
        if quantized not in (0, len(sg.outputs)):
            raise TaskModelError(f"Expected either all or none of the output tensors to be quantized, but found "
                                 f"{quantized} quantized outputs for {len(sg.outputs)} total outputs.")
        metas = model.output_metadata
        if metas is not None and len(metas) != len(sg.outputs):
            raise TaskModelError(f"Mismatch between number of output tensors ({len(sg.outputs)}) and output tensors "
                                 f"metadata ({len(metas)}).")
        names = [t.name for t in metas] if metas else []
        self.head_names: list[str | None] = names if any(names) else [None] * len(sg.outputs)
        self.l2_normalize, self.quantize = bool(l2_normalize), bool(quantize)

    def __call__(self, outputs: list[np.ndarray], timestamp_ms: int | None = None) -> EmbeddingResult:
        out = []
        for i, (name, values) in enumerate(zip(self.head_names, outputs, strict=True)):
            v = values.reshape(-1).astype(np.float32)
            if self.l2_normalize:
                squared = np.float32(np.sum(v * v, dtype=np.float32))
                if squared > 0:
                    v = v * (np.float32(1.0) / np.sqrt(squared))
            if self.quantize:
                x = v * np.float32(128)
                rounded = np.sign(x) * np.floor(np.abs(x) + np.float32(0.5))  # roundf: halves away from zero
                q = np.clip(rounded, -128, 127).astype(np.int8)
                emb = q.view(np.uint8)
            else:
                emb = v.astype(float)  # MediaPipe's Python gives float64 arrays of the float32 values
            out.append(Embedding(embedding=emb, head_index=i, head_name=name or None))
        return EmbeddingResult(embeddings=out, timestamp_ms=timestamp_ms)
