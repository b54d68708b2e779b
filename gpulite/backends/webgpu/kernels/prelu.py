"""PReLU fused into its producer (CONV_2D, DEPTHWISE_CONV_2D, ADD): the shared check.

``WebGpuBackend.prepare`` fuses with :class:`~gpulite.backends.webgpu.fusion_rules.WebGpuFusionRules`,
which asks the producer's kernel module (``conv.prelu_fusable``, ``elementwise.add_prelu_fusable``)
whether its factory runs the pair. The fused node carries ``prelu_alpha`` (the alpha tensor) and
writes the PRELU's output; its WGSL stores through ``finish(v, o, c)`` (:mod:`.epilogue`), which
applies the PReLU with the per-channel alpha of channel ``c``. The PRELU node and its
intermediate tensor are gone.
"""

from __future__ import annotations

import numpy as np

from gpulite.graph.ir import Graph, Node


def alpha_per_channel(g: Graph, prelu: Node, out_shape: tuple[int, ...]) -> bool:
    """The PRELU's alpha is a float32 constant with one value, or one per (last-axis) channel."""
    alpha = g.tensors[prelu.inputs[1]].const
    channels = out_shape[-1] if out_shape else 1
    return (alpha is not None and alpha.dtype == np.float32 and alpha.size in (1, channels) and alpha.ndim <= 4
            and (alpha.ndim == 0 or alpha.shape[-1] == alpha.size)
            and tuple(g.tensors[prelu.outputs[0]].shape) == tuple(out_shape))
