"""Backend-neutral graph IR and passes: folding, fusion, shapes, lifetimes, memory plan."""

from gpulite.graph.ir import Graph, Node, TensorInfo

__all__ = ["Graph", "Node", "TensorInfo"]
