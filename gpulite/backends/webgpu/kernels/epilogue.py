"""What a kernel applies to each value before storing it: ``finish(v, o, c)`` in WGSL.

The fusion pass (:mod:`gpulite.graph.fusion`, allowed by :mod:`..fusion_rules`) leaves on a
node its fused activation (``node.activation``), a fused PReLU (``node.prelu_alpha``) and
elementwise steps (``node.epilogue``: a residual ADD, a clamp, a PReLU, HARD_SWISH,
LOGISTIC). :func:`finish` turns them into the body of

    fn finish(v: f32, o: u32, c: u32) -> f32

where ``v`` is the value computed for the output element at arena word ``o``, of channel
``c`` (last axis). ``conv_out.wgsl`` declares it for the convolutions, ``binary.wgsl`` for
the elementwise binary ops. A residual is read at the same element of its own tensor (or,
when it has fewer channels, at pixel ``(o - base) / channels`` and channel ``c``, the
channels past it adding nothing): the epilogue's own params ``ep_base`` and ``ep_c`` say
where the output starts and how many channels it has, so the kernel's params need not.
Each step computes exactly what the standalone op's WebGPU kernel computes (same WGSL
expressions), so fusing changes no value.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from gpulite.backends.webgpu.context import GpuContext
from gpulite.backends.webgpu.kernels.activations import UNARY
from gpulite.backends.webgpu.program import KernelError, Program, wgsl_clamp
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Activation, HardSwish, Logistic, Node, PRelu, ResidualAdd
from gpulite.model.opdefs import Op

Params = list[tuple[str, str, int]]


def _alpha(ctx: GpuContext, alpha: np.ndarray, name: str, value: str) -> tuple[Params, str]:
    """A PReLU with a single or per-channel alpha, as LiteRT's ``x >= 0 ? x : x * alpha``
    (the alpha a weight: float16 in fp16 plans)."""
    a = np.asarray(alpha, np.float32).reshape(-1)
    params = [(f"{name}_off", "u32", ctx.weight(a).offset), (f"{name}_step", "u32", int(a.size > 1))]
    return params, f"{value} = select({value} * wt(P.{name}_off + c * P.{name}_step), {value}, {value} >= 0.0);"


def finish(node: Node, ctx: GpuContext) -> tuple[Params, dict[str, str]]:
    """Extra params and the ``$FINISH`` body of ``fn finish(v: f32, o: u32, c: u32) -> f32``
    for ``node`` (see the module docstring). The program must be built with
    ``make_program(..., act=node.activation, weights=ctx.weights)``."""
    if node.prelu_alpha is None and not node.epilogue:
        return [], {"FINISH": "return act(v);"}
    params: Params = []
    lines = ["var r = act(v);"]
    if node.prelu_alpha is not None:
        p, line = _alpha(ctx, ctx.graph.tensors[node.prelu_alpha].const, "alpha", "r")
        params += p
        lines.append(line)
    if node.epilogue:
        out = ctx.output(0)
        params += [("ep_base", "u32", out.offset), ("ep_c", "u32", out.shape[-1] if out.shape else 1)]
    for k, step in enumerate(node.epilogue):
        if isinstance(step, ResidualAdd):
            res = ctx.input(step.slot)
            ctx.require_f32(res)
            params.append((f"res{k}_off", "u32", res.offset))
            if step.channels == (out.shape[-1] if out.shape else 1):
                lines.append(f"r = r + ld(P.res{k}_off + o - P.ep_base);")
            else:  # into the first channels: a channel PAD of the residual, dropped by the fusion
                params.append((f"res{k}_c", "u32", step.channels))
                at = f"P.res{k}_off + (o - P.ep_base) / P.ep_c * P.res{k}_c + c"  # pixel, then channel c
                lines.append(f"if (c < P.res{k}_c) {{ r = r + ld({at}); }}")
        elif isinstance(step, Activation):
            lines.append(f"r = {wgsl_clamp('r', step.activation)};")
        elif isinstance(step, PRelu):
            p, line = _alpha(ctx, ctx.const(step.slot), f"pa{k}", "r")
            params += p
            lines.append(line)
        elif isinstance(step, (HardSwish, Logistic)):
            expr = UNARY[Op.HARD_SWISH if isinstance(step, HardSwish) else Op.LOGISTIC]
            lines.append(f"{{ let x = r; r = {expr}; }}")
        else:  # a step kind this module does not know yet: never drop it silently
            raise KernelError(f"{node.op} node {node.index}: epilogue step {step!r} has no WGSL form")
    lines.append("return r;")
    return params, {"FINISH": "\n    ".join(lines)}


def has_fused(node: Node) -> bool:
    """Whether ``node`` carries something the WebGPU fusion rules fused into it."""
    return (node.prelu_alpha is not None or bool(node.epilogue) or node.pointwise is not None
            or node.input_scale is not None)


def keep_fused(factory: Callable[[Node, GpuContext], Program | list[Program]]
               ) -> Callable[[Node, GpuContext], Program | list[Program]]:
    """A node with fused work must not fall back to a CPU kernel that may know nothing of it:
    a decline there is a bug in the fusion rules' checks, reported instead of silently dropped."""
    def wrapped(node: Node, ctx: GpuContext) -> Program | list[Program]:
        try:
            return factory(node, ctx)
        except UnsupportedOpError as e:
            if has_fused(node):
                raise KernelError(f"{node.op} node {node.index} has fused work but its kernel declined: {e}") from e
            raise
    return wrapped
