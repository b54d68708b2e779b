"""The zoo models on WebGPU against LiteRT on seeded random input.

Bound: max|Δ| <= 1e-3 * max(1, max|ref|) per output. Every model here runs entirely on the
GPU (asserted), so the comparison measures the WGSL kernels, not the CPU fallback. The
default run uses the small models (lavapipe, a CPU-emulated GPU, is slow); the rest are
marked ``slow``.

On random input a segmentation mask or a presence score sits at the flat end of its final
LOGISTIC (selfie_segmentation's mask is < 1e-8 everywhere), where a wrong network would
still pass. So the logits feeding an output LOGISTIC are compared too: they are made extra
graph outputs in gpulite and read from LiteRT with ``experimental_preserve_all_tensors``.
"""

from __future__ import annotations

import numpy as np
import pytest

from gpulite import Interpreter, zoo
from gpulite.errors import ModelError
from tests.compare import assert_same
from tests.webgpu.support import gpu_only, require_adapter, run

require_adapter()
pytestmark = pytest.mark.filterwarnings("ignore:Warning. Enabling .experimental_preserve_all_tensors.")

RTOL = 1e-3
SMALL = ["face_detection_short_range", "face_landmark", "iris_landmark", "hand_recrop", "selfie_segmentation"]
LARGE = ["face_detection_full_range_sparse", "hand_landmark_lite", "hand_landmark_full", "palm_detection_lite",
         "palm_detection_full", "pose_detection", "pose_landmark_full", "selfie_segmentation_landscape"]


def _path(name: str) -> str:
    try:
        return str(zoo.resolve(name))
    except ModelError as e:
        pytest.skip(f"model {name} not available: {e}")


def _inputs(interp, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.uniform(-1, 1, d["shape"]).astype(d["dtype"]) for d in interp.get_input_details()]


def _check(name: str) -> None:
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    path = _path(name)
    it = Interpreter(model_path=path, backend="webgpu")
    g = it.graph
    probes = [n.inputs[0] for n in g.nodes if n.op == "LOGISTIC" and n.outputs[0] in g.outputs]
    g.outputs = (*g.outputs, *probes)  # keeps the logits alive in the plan and reads them back
    ref = LiteRT(model_path=path, experimental_preserve_all_tensors=bool(probes))
    ref.allocate_tensors()
    feeds = _inputs(ref)
    expected = run(ref, feeds) + [ref.get_tensor(i) for i in probes]
    actual = run(it, feeds)
    gpu_only(it.get_plan())
    names = [g.tensors[i].name for i in g.outputs]
    assert len(actual) == len(expected)
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, rtol=RTOL, what=f"{name} output {i} ({names[i]})")


@pytest.mark.parametrize("name", SMALL)
def test_small_model(name):
    _check(name)


@pytest.mark.slow
@pytest.mark.parametrize("name", LARGE)
def test_large_model(name):
    _check(name)


@pytest.mark.slow
def test_face_landmark_with_attention_against_cpu_backend():
    # LiteRT's Python interpreter lacks MediaPipe's custom ops, so this model is checked against
    # gpulite's CPU backend. Its three custom ops run on the CPU: a real-model partition test.
    path = _path("face_landmark_with_attention")
    cpu = Interpreter(model_path=path, backend="cpu")
    try:
        cpu.allocate_tensors()
    except NotImplementedError as e:
        pytest.skip(f"the CPU backend cannot run this model yet: {e}")
    feeds = _inputs(cpu)
    expected = run(cpu, feeds)
    gpu = Interpreter(model_path=path, backend="webgpu")
    actual = run(gpu, feeds)
    plan = gpu.get_plan()
    cpu_ops = {op for p in plan["partitions"] if p["backend"] == "cpu" for op in p["ops"]}
    assert cpu_ops == {"Landmarks2TransformMatrix", "TransformTensorBilinear", "TransformLandmarks"}
    assert plan["crossings"], "custom ops on the CPU between GPU partitions must cross"
    for i, (a, e) in enumerate(zip(actual, expected, strict=True)):
        assert_same(a, e, rtol=RTOL, what=f"output {i}")
