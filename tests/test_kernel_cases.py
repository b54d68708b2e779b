"""``register_case``: a kernel for the nodes of an op a predicate picks, the op's kernel for the rest."""

from __future__ import annotations

import pytest

from gpulite.backends import kernels
from gpulite.model.opdefs import Op


@pytest.fixture
def table(monkeypatch: pytest.MonkeyPatch):
    """A private copy of the registry's tables for one test."""
    monkeypatch.setattr(kernels, "_KERNELS", {})
    monkeypatch.setattr(kernels, "_CASES", {})
    monkeypatch.setattr(kernels, "_DISCOVERED", {"cpu", "webgpu", "case-test"})


def test_a_case_takes_its_nodes_and_the_kernel_the_rest(table) -> None:
    kernels.register_kernel(Op.CONV_2D, "case-test", lambda node, ctx: ("plain", node))

    @kernels.register_case(Op.CONV_2D, "case-test", lambda node, ctx: node == "grouped")
    def grouped(node, ctx):
        return ("grouped", node)

    factory = kernels.get_kernel(Op.CONV_2D, "case-test")
    assert factory("grouped", None) == ("grouped", "grouped")
    assert factory("dense", None) == ("plain", "dense")


def test_a_case_without_the_op_kernel_is_no_kernel(table) -> None:
    """Coverage tables and fallbacks ask get_kernel: a lone case does not make the op supported."""
    kernels.register_case(Op.CONV_2D, "case-test", lambda node, ctx: True)(lambda node, ctx: "case")
    assert kernels.get_kernel(Op.CONV_2D, "case-test") is None


def test_webgpu_grouped_conv_is_a_case_of_conv_2d() -> None:
    pytest.importorskip("wgpu")
    from gpulite.backends.webgpu.kernels import conv, grouped_conv

    kernels.discover("webgpu")
    cases = kernels._CASES[(Op.CONV_2D, "webgpu")]
    assert (grouped_conv.grouped, grouped_conv.grouped_conv2d) in cases
    assert kernels._KERNELS[(Op.CONV_2D, "webgpu")] is conv.conv2d
