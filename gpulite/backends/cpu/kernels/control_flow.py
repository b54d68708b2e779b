"""WHILE, IF and CALL_ONCE: nodes that run other subgraphs of the model (``graph.subgraphs``).

The kernel factory compiles each subgraph it names once, at ``allocate_tensors``, into an
executable of its own (the CPU backend's ``prepare``, ``plan_memory`` and ``compile``, so
fusion and memory planning apply inside it too), and every invoke copies values in and out
of it. A value the node gets from a constant of the calling graph is folded into the
subgraph as a constant instead (a loop's only when the body passes it through unchanged), so
the subgraph's kernels see their weights as constants, as they would at the top level.

Shapes are static: a loop value must keep its shape through cond and body, and a branch's
outputs must have the IF's output shapes; anything else is refused at ``allocate_tensors``
(:class:`~gpulite.errors.UnsupportedOpError`), never reshaped at run time.

- WHILE (``while.cc``): the loop values start as the node's inputs; while the cond subgraph
  gives true for them, the body subgraph maps them to the next values; the node's outputs are
  the last values.
- IF (``if.cc``): input 0 is a single bool; the then or else subgraph maps the other inputs
  to the node's outputs.
- CALL_ONCE (``call_once.cc``): runs its init subgraph (no inputs, no outputs: it assigns resource
  variables their first values) at the first invoke of the executable.

The subgraphs share the caller's resource variables (``ctx.resources``).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from gpulite.backends.cpu.backend import CpuExecutable, compile_subgraph
from gpulite.backends.kernels import register_kernel
from gpulite.errors import UnsupportedOpError
from gpulite.graph.ir import Graph
from gpulite.graph.validate import called_subgraphs
from gpulite.model.opdefs import Op


class _Call:
    """One subgraph compiled for a node: copy values in, invoke, read the outputs."""

    def __init__(self, node, ctx, role: str, sub: Graph, consts: dict[int, np.ndarray]) -> None:
        tensors = list(sub.tensors)
        for pos, value in consts.items():
            t = tensors[sub.inputs[pos]]
            tensors[t.index] = dataclasses.replace(t, const=np.asarray(value).reshape(t.shape))
        inputs = tuple(t for pos, t in enumerate(sub.inputs) if pos not in consts)
        g = Graph(tensors, list(sub.nodes), inputs, sub.outputs, sub.name, sub.subgraphs)
        try:
            self.exe: CpuExecutable = compile_subgraph(g, ctx.num_threads, ctx.resources)
        except UnsupportedOpError as e:
            raise _refuse(node, f"its {role} subgraph {sub.name!r} cannot run: {e}") from e
        arrays = self.exe.arrays
        # (position, array) of each input the subgraph reads or passes on: a loop's cond usually
        # reads only the counters, so the big loop values are not copied into it at every step
        used = {i for n in g.nodes for i in n.inputs} | set(sub.outputs)
        self.ins = [(pos, arrays[t]) for pos, t in enumerate(sub.inputs)
                    if pos not in consts and t in arrays and t in used]
        self.outs = [arrays[t] for t in sub.outputs]

    def __call__(self, values: list[np.ndarray]) -> list[np.ndarray]:
        for pos, a in self.ins:
            np.copyto(a, values[pos])
        self.exe.invoke()
        return self.outs


def _refuse(node, why: str) -> UnsupportedOpError:
    return UnsupportedOpError(node.op, node.index, "cpu", why)


def _same_shapes(node, what: str, want: tuple[int, ...], sub: Graph, tensors: tuple[int, ...], role: str) -> None:
    for pos, t in enumerate(tensors):
        got = sub.tensors[t].shape
        if got != want[pos]:
            raise _refuse(node, f"{role} subgraph {sub.name!r} has {what} {pos} of shape {list(got)} where the node "
                          f"has {list(want[pos])}; gpulite runs control flow on static shapes only")


@register_kernel(Op.WHILE, "cpu")
def while_loop(node, ctx):
    cond_g, body_g = called_subgraphs(ctx.graph, node)
    n = len(node.inputs)
    shapes = tuple(ctx.in_info(k).shape for k in range(n))
    for k in range(n):
        if ctx.out_info(k).shape != shapes[k]:
            raise _refuse(node, f"loop value {k} is {list(shapes[k])} as input but {list(ctx.out_info(k).shape)} as "
                          "output; gpulite runs loops whose values keep their shapes")
    _same_shapes(node, "input", shapes, cond_g, cond_g.inputs, "cond")
    _same_shapes(node, "input", shapes, body_g, body_g.inputs, "body")
    _same_shapes(node, "output", shapes, body_g, body_g.outputs, "body")
    if np.prod(cond_g.tensors[cond_g.outputs[0]].shape, dtype=np.int64) != 1:
        raise _refuse(node, f"cond subgraph {cond_g.name!r} gives {list(cond_g.tensors[cond_g.outputs[0]].shape)} "
                      "values; expected one bool")
    invariant = {k: ctx.const(k) for k in range(n)
                 if ctx.const(k) is not None and body_g.outputs[k] == body_g.inputs[k]}
    cond, body = _Call(node, ctx, "cond", cond_g, invariant), _Call(node, ctx, "body", body_g, invariant)
    ins = [ctx.input(k) for k in range(n)]
    outs = [ctx.output(k) for k in range(n)]
    flag = cond.outs[0].reshape(-1)

    def run():
        for k in range(n):
            np.copyto(outs[k], ins[k])
        while True:
            cond(outs)
            if not flag[0]:
                break
            for k, value in enumerate(body(outs)):
                np.copyto(outs[k], value)
    return run


@register_kernel(Op.IF, "cpu")
def if_then_else(node, ctx):
    subs = called_subgraphs(ctx.graph, node)
    flag_info = ctx.in_info(0)
    if flag_info.dtype != np.bool_ or np.prod(flag_info.shape, dtype=np.int64) != 1:
        raise _refuse(node, f"the condition (input 0) is {flag_info.dtype} {list(flag_info.shape)}; expected one bool")
    n = len(node.inputs) - 1
    in_shapes = tuple(ctx.in_info(k + 1).shape for k in range(n))
    out_shapes = tuple(ctx.out_info(k).shape for k in range(len(node.outputs)))
    for role, sub in zip(("then", "else"), subs, strict=True):
        _same_shapes(node, "input", in_shapes, sub, sub.inputs, role)
        _same_shapes(node, "output", out_shapes, sub, sub.outputs, role)
    consts = {k: ctx.const(k + 1) for k in range(n) if ctx.const(k + 1) is not None}
    then_call, else_call = (_Call(node, ctx, role, sub, consts) for role, sub in zip(("then", "else"), subs,
                                                                                     strict=True))
    flag = ctx.input(0).reshape(-1)
    ins = [ctx.input(k + 1) for k in range(n)]
    outs = [ctx.output(k) for k in range(len(node.outputs))]

    def run():
        for out, value in zip(outs, (then_call if flag[0] else else_call)(ins), strict=True):
            np.copyto(out, value)
    return run


@register_kernel(Op.CALL_ONCE, "cpu")
def call_once(node, ctx):
    (init_g,) = called_subgraphs(ctx.graph, node)
    init = _Call(node, ctx, "init", init_g, {})
    done = []

    def run():
        if not done:
            init([])
            done.append(True)
    return run
