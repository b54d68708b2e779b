"""PReLU fused into its producer (CONV_2D, DEPTHWISE_CONV_2D, ADD): shared pieces.

``WebGpuBackend.prepare`` fuses with :class:`~gpulite.backends.webgpu.fusion_rules.WebGpuFusionRules`,
which asks the producer's kernel module (``conv.prelu_fusable``, ``elementwise.add_prelu_fusable``)
whether its factory runs the pair. The fused node carries ``prelu_alpha`` (the alpha tensor) and
writes the PRELU's output; its WGSL stores through ``finish(v, c)`` (:func:`finish`), which applies
the PReLU with the per-channel alpha of channel ``c``. The PRELU node and its intermediate tensor
are gone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import KernelError, Program
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node


def alpha_per_channel(g: Graph, prelu: Node, out_shape: tuple[int, ...]) -> bool:
    """The PRELU's alpha is a float32 constant with one value, or one per (last-axis) channel."""
    alpha = g.tensors[prelu.inputs[1]].const
    channels = out_shape[-1] if out_shape else 1
    return (alpha is not None and alpha.dtype == np.float32 and alpha.size in (1, channels) and alpha.ndim <= 4
            and (alpha.ndim == 0 or alpha.shape[-1] == alpha.size)
            and tuple(g.tensors[prelu.outputs[0]].shape) == tuple(out_shape))


def finish(node: Node, ctx: GpuContext) -> tuple[list[tuple[str, str, int]], dict[str, str]]:
    """Extra params and the ``$FINISH`` body of ``fn finish(v: f32, c: u32) -> f32``: the fused
    activation, or (``node.prelu_alpha``) the PReLU as LiteRT's ``x >= 0 ? x : x * alpha``
    (alpha a weight: ``ctx.weight``, so the program must be built with ``weights=ctx.weights``)."""
    if node.prelu_alpha is None:
        return [], {"FINISH": "return act(v);"}
    alpha = ctx.graph.tensors[node.prelu_alpha].const.astype(np.float32).reshape(-1)
    params = [("alpha_off", "u32", ctx.weight(alpha).offset), ("alpha_step", "u32", int(alpha.size > 1))]
    return params, {"FINISH": "return select(v * wt(P.alpha_off + c * P.alpha_step), v, v >= 0.0);"}


def keep_fused_prelu(factory: Callable[[Node, GpuContext], Program]) -> Callable[[Node, GpuContext], Program]:
    """A node with a fused PReLU must not fall back to the CPU kernel, which knows nothing of
    it: a decline there is a bug in its ``prelu_fusable`` check, reported instead of silently dropped."""
    def wrapped(node: Node, ctx: GpuContext) -> Program:
        try:
            return factory(node, ctx)
        except UnsupportedOpError as e:
            if node.prelu_alpha is not None:
                raise KernelError(f"{node.op} node {node.index} has a fused PReLU but its kernel declined: {e}") from e
            raise
    return wrapped
