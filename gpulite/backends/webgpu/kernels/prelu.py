"""PReLU fused into its producer (CONV_2D, DEPTHWISE_CONV_2D, ADD): shared pieces.

``WebGpuBackend.prepare`` runs ``passes.fuse_prelu`` with :func:`prelu_fusable`, which
asks the producer's kernel module (its entry in ``FUSABLE``) whether its factory runs the
pair. The fused node carries ``attrs["fused_prelu"]`` (the alpha tensor) and writes the PRELU's
output; its WGSL stores through ``finish(v, c)`` (:func:`finish`), which applies the PReLU with
the per-channel alpha of channel ``c``. The PRELU node and its intermediate tensor are gone.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.kernels import discover
from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.program import KernelError, Program
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph, Node

# Producer op -> whether its factory runs (graph, producer, prelu) with the PReLU fused.
FUSABLE: dict[str, Callable[[Graph, Node, Node], bool]] = {}


def prelu_fusable(g: Graph, producer: Node, prelu: Node) -> bool:
    discover("webgpu")  # the kernel modules fill FUSABLE
    accept = FUSABLE.get(producer.op)
    return accept is not None and accept(g, producer, prelu)


def alpha_per_channel(g: Graph, prelu: Node, out_shape: tuple[int, ...]) -> bool:
    """The PRELU's alpha is a float32 constant with one value, or one per (last-axis) channel."""
    alpha = g.tensors[prelu.inputs[1]].const
    channels = out_shape[-1] if out_shape else 1
    return (alpha is not None and alpha.dtype == np.float32 and alpha.size in (1, channels) and alpha.ndim <= 4
            and (alpha.ndim == 0 or alpha.shape[-1] == alpha.size)
            and tuple(g.tensors[prelu.outputs[0]].shape) == tuple(out_shape))


def finish(node: Node, ctx: GpuContext) -> tuple[list[tuple[str, str, int]], dict[str, str]]:
    """Extra params and the ``$FINISH`` body of ``fn finish(v: f32, c: u32) -> f32``: the fused
    activation, or (``attrs["fused_prelu"]``) the PReLU as LiteRT's ``x >= 0 ? x : x * alpha``
    (alpha a weight: ``ctx.weight``, so the program must be built with ``weights=ctx.weights``)."""
    if "fused_prelu" not in node.attrs:
        return [], {"FINISH": "return act(v);"}
    alpha = ctx.graph.tensors[node.attrs["fused_prelu"]].const.astype(np.float32).reshape(-1)
    params = [("alpha_off", "u32", ctx.weight(alpha).offset), ("alpha_step", "u32", int(alpha.size > 1))]
    return params, {"FINISH": "return select(v * wt(P.alpha_off + c * P.alpha_step), v, v >= 0.0);"}


def keep_fused_prelu(factory: Callable[[Node, GpuContext], Program]) -> Callable[[Node, GpuContext], Program]:
    """A node with a fused PReLU must not fall back to the CPU kernel, which knows nothing of
    it: a decline there is a bug in its FUSABLE entry, reported instead of silently dropped."""
    def wrapped(node: Node, ctx: GpuContext) -> Program:
        try:
            return factory(node, ctx)
        except UnsupportedOpError as e:
            if "fused_prelu" in node.attrs:
                raise KernelError(f"{node.op} node {node.index} has a fused PReLU but its kernel declined: {e}") from e
            raise
    return wrapped
