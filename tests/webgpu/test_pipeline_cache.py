"""The pipeline cache: sizes travel in uniforms, so a resized input or a second interpreter of
the same model compiles no new pipelines."""

from __future__ import annotations

import numpy as np
import pytest

from gpulite.testing.tflite_writer import ModelBuilder
from tests.webgpu.support import require_adapter
from tests.webgpu.test_fusion import ALPHAS, _prelu_after

require_adapter()

F32 = np.float32


def _rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


class _CompileSpy:
    """Stands in for a wgpu device, counting shader compilations (one per new pipeline)."""

    def __init__(self, device):
        self._device, self.compiled = device, 0

    def __getattr__(self, name):
        return getattr(self._device, name)

    def create_shader_module(self, **kw):
        self.compiled += 1
        return self._device.create_shader_module(**kw)


def _spied_device():
    from gpulite.backends.webgpu import GpuDevice

    gdev = GpuDevice()  # a private device: a fresh, empty pipeline cache
    spy = _CompileSpy(gdev.device)
    gdev.device = spy
    return gdev, spy


def _resizable(op: str, **opts) -> tuple[bytes, tuple[int, ...]]:
    """A single-op model on a (1, H, W, 8) input whose H and W may be resized (the stored
    output shape is a placeholder: every run resizes the input to another size first)."""
    rng = _rng(13)
    mb = ModelBuilder()
    x = mb.input("x", (1, 5, 5, 8), F32, shape_signature=(1, -1, -1, 8))
    ins, out_c = [x], 8
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D"):
        w = (8, 3, 3, 8) if op == "CONV_2D" else (1, 3, 3, 8)
        ins += [mb.const("w", rng.standard_normal(w).astype(F32)), mb.const("b", rng.standard_normal(8).astype(F32))]
    elif op in ("ADD", "PRELU"):
        ins.append(mb.const("c", rng.uniform(-1, 1, (1, 1, 8)).astype(F32)))
    elif op in ("MEAN", "TRANSPOSE", "PAD"):
        ins.append(mb.const("p", np.array({"MEAN": [1, 2], "TRANSPOSE": [0, 3, 1, 2],
                                           "PAD": [[0, 0], [1, 2], [2, 1], [0, 0]]}[op], np.int32)))
    elif op in ("RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR"):
        ins.append(mb.const("size", np.array([9, 5], np.int32)))
    y = mb.tensor("y", (1, 5, 5, out_c), F32, shape_signature=(1, -1, -1, out_c))
    mb.op(op, ins, [y], **opts)
    mb.output(y)
    return mb.build()


RESIZABLE = {
    "conv": ("CONV_2D", dict(padding="SAME", stride_h=2, stride_w=1)),
    "depthwise": ("DEPTHWISE_CONV_2D", dict(padding="VALID", stride_h=1, stride_w=1, depth_multiplier=1)),
    "add": ("ADD", {}), "prelu": ("PRELU", {}), "softmax": ("SOFTMAX", dict(beta=1.0)),
    "max_pool": ("MAX_POOL_2D", dict(padding="SAME", stride_h=2, stride_w=2, filter_height=3, filter_width=3)),
    "mean": ("MEAN", dict(keep_dims=True)), "transpose": ("TRANSPOSE", {}), "pad": ("PAD", {}),
    "resize_nearest": ("RESIZE_NEAREST_NEIGHBOR", dict(half_pixel_centers=True)),
    "resize_bilinear": ("RESIZE_BILINEAR", dict(align_corners=True)),
    "space_to_depth": ("SPACE_TO_DEPTH", dict(block_size=2)),
}


@pytest.mark.parametrize("case", RESIZABLE)
def test_resizing_input_compiles_no_new_pipelines(case):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    from gpulite import Interpreter
    from tests.compare import assert_same
    from tests.webgpu.support import gpu_only, run

    model = _resizable(*RESIZABLE[case][:1], **RESIZABLE[case][1])
    gdev, spy = _spied_device()
    it = Interpreter(model_content=model, backend="webgpu", device=gdev)
    ref = LiteRT(model_content=model)
    compiled = []
    for k, (h, w) in enumerate([(6, 6), (10, 8), (4, 12), (16, 16)]):
        for interp in (it, ref):  # every size differs from the stored one (whose output is a placeholder)
            interp.resize_tensor_input(interp.get_input_details()[0]["index"], [1, h, w, 8])
        x = _rng(k).uniform(-3, 3, (1, h, w, 8)).astype(F32)
        before = spy.compiled
        out, = run(it, [x])
        compiled.append(spy.compiled - before)
        gpu_only(it.get_plan())
        assert_same(out, run(ref, [x])[0], rtol=1e-5, what=f"{case} at {h}x{w}")
    assert compiled[0] >= 1 and compiled[1:] == [0, 0, 0], f"pipelines compiled per size: {compiled}"


def test_two_interpreters_share_every_pipeline():
    from gpulite import Interpreter
    from tests.webgpu.support import run

    model, feeds = _prelu_after("CONV_2D", ALPHAS["per-channel"])
    gdev, spy = _spied_device()
    a = Interpreter(model_content=model, backend="webgpu", device=gdev)
    run(a, feeds)
    first, cached = spy.compiled, dict(gdev.pipelines)
    b = Interpreter(model_content=model, backend="webgpu", device=gdev)
    out_b, = run(b, feeds)
    assert first >= 1 and spy.compiled == first, "the second interpreter compiled pipelines of its own"
    assert {k: v[1] for k, v in gdev.pipelines.items()} == {k: v[1] for k, v in cached.items()}
    assert b.get_plan()["pipelines"] == a.get_plan()["pipelines"] >= 1
    np.testing.assert_array_equal(out_b, run(a, feeds)[0])
