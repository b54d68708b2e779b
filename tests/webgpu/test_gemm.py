"""The tiled matrix product's cut into workgroups (kernels/gemm.py) for the zoo's shapes, and the
programs it gives: the op suite (tests/ops/test_conv.py, test_fc.py, "gemm-*" cases) checks
the values of each path against LiteRT."""

from __future__ import annotations

import pytest

from gpulite.backends.webgpu.kernels import gemm


@pytest.mark.parametrize("m,n,k,batches,rpt,kg,splits", [
    (128 * 128, 64, 16, 1, 4, 1, 1),  # pose_landmark_full's largest 1x1 conv: many tiles, short K
    (64, 288, 864, 1, 1, 4, 1),  # pose's 8x8x864 -> 288: 18 32x32 tiles, so 72 of 8 rows; K 54 steps: four K groups
    (49, 192, 1152, 1, 1, 4, 1),  # hand_landmark_full's 7x7x1152 -> 192: K > 1024
    (1, 63, 1152, 1, 1, 4, 1),  # hand_landmark_full's FULLY_CONNECTED 1152 -> 63
    (128 * 49, 192, 1152, 1, 4, 4, 1),  # the same at batch 128: many tiles, but K > 1024
    (256, 528, 88, 1, 4, 1, 1),  # pose's 16x16x88 -> 528: 136 tiles, short K
    (1, 7, 5000, 1, 1, 4, 2),  # K > 4 x 1024: two slices of K, then a sum
    (3, 5, 4, 2, 1, 1, 1),
])
def test_plan(m, n, k, batches, rpt, kg, splits):
    p = gemm.plan(m, n, k, batches)
    assert (p.rpt, p.kg, p.splits) == (rpt, kg, splits)
    assert p.serial <= gemm.MAX_SERIAL  # no thread sums more than 1024 products of one output
    assert p.k_tiles * p.splits >= p.kt_total > (p.k_tiles - 1) * p.splits - p.k_tiles  # slices cover K, none empty
    assert p.workgroups == -(-m // (8 * rpt)) * -(-n // 32) * batches * splits
    assert p.n_pad % 32 == 0 and p.k_pad % 16 == 0 and p.k_pad >= k


def test_cpu_adapters_spread_nothing():
    """Without spread (a CPU adapter), 32 x 32 tiles, and K groups only past 1024 products."""
    assert (gemm.plan(64, 288, 864, spread=False).rpt, gemm.plan(64, 288, 864, spread=False).kg) == (4, 1)
    p = gemm.plan(1, 63, 1152, spread=False)
    assert (p.rpt, p.kg, p.serial) == (4, 4, 288)


# (op, input shape, weights shape, output shape, the plan's rows per thread and K groups on a GPU)
SPREAD_CASES = {
    "conv-k3-c96": ("CONV_2D", (1, 5, 5, 96), (40, 3, 3, 96), (1, 5, 5, 40), 1, 4),
    "conv-rows4-groups": ("CONV_2D", (1, 32, 64, 16), (32, 3, 3, 16), (1, 32, 64, 32), 4, 4),
    "conv-1x1-edges": ("CONV_2D", (2, 5, 7, 13), (33, 1, 1, 13), (2, 5, 7, 33), 1, 1),
    "fc-one-row-1152": ("FULLY_CONNECTED", (1, 1152), (63, 1152), (1, 63), 1, 4),
    "fc-split-5000": ("FULLY_CONNECTED", (1, 5000), (7, 5000), (1, 7), 1, 4),
    "fc-rows": ("FULLY_CONNECTED", (70, 200), (45, 200), (70, 45), 1, 4),
}


@pytest.mark.parametrize("case", SPREAD_CASES)
def test_gpu_plans_on_any_adapter(case, monkeypatch):
    """The plans a GPU gets (8-row tiles, K groups for few workgroups), forced here where the
    adapter may be a CPU (which gets none of them): LiteRT's values, and the plan asked for."""
    import numpy as np

    from gpulite import Interpreter
    from gpulite.testing.tflite_writer import ModelBuilder
    from tests.compare import assert_same
    from tests.ops.harness import run_litert
    from tests.webgpu.support import require_adapter

    require_adapter()
    op, xs, ws, ys, rpt, kg = SPREAD_CASES[case]
    monkeypatch.setattr(gemm, "spreads", lambda gdev: True)
    rng = np.random.default_rng(42)
    mb = ModelBuilder()
    x = mb.input("x", xs, np.float32)
    w = mb.const("w", rng.standard_normal(ws).astype(np.float32))
    b = mb.const("b", rng.standard_normal(ws[0]).astype(np.float32))
    y = mb.tensor("y", ys, np.float32)
    opts = {"padding": "SAME", "stride_h": 1, "stride_w": 1} if op == "CONV_2D" else {}
    mb.op(op, [x, w, b], [y], fused_activation_function="RELU", **opts)
    mb.output(y)
    model, xv = mb.build(), rng.standard_normal(xs).astype(np.float32)
    it = Interpreter(model_content=model, backend="webgpu")
    it.allocate_tensors()
    (prog, *_) = [q for part in it._exe.parts for q in getattr(part, "work", []) if hasattr(q, "key")]
    assert f"x {64 * kg} threads, {rpt}x4 outputs" in prog.name
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    assert_same(it.get_tensor(it.get_output_details()[0]["index"]), run_litert(model, [xv])[0], what=case)


def test_programs_declare_their_work():
    """The product runs as cooperating workgroups (gpulite's groups=True entry point: no
    per-thread early return before its barriers) and declares the products one thread sums;
    K slices add the sum's dispatch, which folds one partial per slice."""
    ctx = _Ctx()
    (one,) = gemm.programs(ctx, "t", ("gemm_bmm",), gemm.plan(40, 33, 37), [], A_VEC="false", B_VEC="false",
                           BIAS="ld")
    assert "fn run_group(" in one.wgsl and one.dispatch == (10, 1, 1) and one.threads == 10 * 64  # 5 x 2 tiles
    assert one.reduction_per_thread == 48
    main, total = gemm.programs(ctx, "t", ("gemm_bmm",), gemm.plan(1, 7, 5000), [], A_VEC="true", BIAS="ld",
                                 B_VEC="false")
    assert main.workgroup_size == 256 and main.dispatch == (2, 1, 1) and main.reduction_per_thread == 640
    assert "fn run(" in total.wgsl and total.reduction_per_thread == 2 and total.threads == 8


class _Ctx:
    """Scratch at word 0 is all gemm.programs asks of its context."""

    def scratch(self, shape):
        return type("Ref", (), {"offset": 0})()


def test_grid_past_the_per_dimension_limit(monkeypatch):
    """A product with more workgroups than one grid dimension holds spills into y (as a batch-128
    pose_landmark_full's 131,072 tiles of its largest 1x1 conv would); here the limit is
    lowered to 5 so that a 6 x 3-tile FULLY_CONNECTED spills, and its values must not change."""
    import numpy as np

    from gpulite.backends.webgpu import program
    from gpulite.testing.tflite_writer import ModelBuilder
    from tests.compare import assert_same
    from tests.ops.harness import run_gpulite, run_litert
    from tests.webgpu.support import require_adapter

    require_adapter()
    rng = np.random.default_rng(40)
    mb = ModelBuilder()
    x = mb.input("x", (190, 24), np.float32)
    w = mb.const("w", rng.standard_normal((70, 24)).astype(np.float32))
    b = mb.const("b", rng.standard_normal(70).astype(np.float32))
    y = mb.tensor("y", (190, 70), np.float32)
    mb.op("FULLY_CONNECTED", [x, w, b], [y])
    mb.output(y)
    model, xv = mb.build(), rng.standard_normal((190, 24)).astype(np.float32)
    monkeypatch.setattr(program, "MAX_WORKGROUPS_PER_DIM", 5)
    assert program.dispatch_size(18, 1) == (5, 4, 1)
    assert_same(run_gpulite(model, [xv], "webgpu")[0], run_litert(model, [xv])[0], what="spilled grid")


def test_float16_weights_read_packed(monkeypatch):
    """precision="fp16" through the tiled product and the register-blocked depthwise: their
    weights (and biases) stored as float16, offsets counted in halves, read with
    unpack2x16float ("f16-packed", core WGSL, so this runs on adapters without shader-f16,
    whose fp16 plans otherwise run in fp32). Within docs/webgpu.md's fp16 bound of LiteRT."""
    import numpy as np

    from gpulite import Interpreter
    from gpulite.backends.webgpu.device import get_device
    from gpulite.testing.tflite_writer import ModelBuilder
    from tests.ops.harness import run_litert
    from tests.webgpu.support import require_adapter

    require_adapter()
    monkeypatch.setattr(get_device(), "has_f16", True)
    monkeypatch.setenv("GPULITE_F16_LOADS", "packed")
    rng = np.random.default_rng(41)
    mb = ModelBuilder()
    x = mb.input("x", (1, 9, 10, 12), np.float32)
    w1 = mb.const("w1", rng.standard_normal((37, 3, 3, 12)).astype(np.float32))
    b1 = mb.const("b1", rng.standard_normal(37).astype(np.float32))
    h1 = mb.tensor("h1", (1, 9, 10, 37), np.float32)
    mb.op("CONV_2D", [x, w1, b1], [h1], padding="SAME", stride_h=1, stride_w=1, fused_activation_function="RELU")
    w2 = mb.const("w2", rng.standard_normal((1, 3, 3, 12)).astype(np.float32))
    b2 = mb.const("b2", rng.standard_normal(12).astype(np.float32))
    h2 = mb.tensor("h2", (1, 9, 10, 12), np.float32)
    mb.op("DEPTHWISE_CONV_2D", [x, w2, b2], [h2], padding="SAME", stride_h=1, stride_w=1, depth_multiplier=1)
    w3 = mb.const("w3", rng.standard_normal((5, 1080)).astype(np.float32))
    b3 = mb.const("b3", rng.standard_normal(5).astype(np.float32))
    h3 = mb.tensor("h3", (1, 5), np.float32)
    mb.op("FULLY_CONNECTED", [h2, w3, b3], [h3])
    mb.output(h1)
    mb.output(h3)
    model, xv = mb.build(), rng.standard_normal((1, 9, 10, 12)).astype(np.float32)
    it = Interpreter(model_content=model, backend="webgpu", precision="fp16")
    it.allocate_tensors()
    formats = {p.weights for part in it._exe.parts for p in getattr(part, "work", []) if hasattr(p, "weights")}
    assert formats == {"f16"}, formats  # every program here reads float16 weights
    it.set_tensor(it.get_input_details()[0]["index"], xv)
    it.invoke()
    for d, ref in zip(it.get_output_details(), run_litert(model, [xv]), strict=True):
        got = it.get_tensor(d["index"])
        err = float(np.max(np.abs(got - ref))) / max(1.0, float(np.max(np.abs(ref))))
        assert err <= 5e-3, (d["name"], err)
        assert err > 0  # the weights were rounded: not an fp32 run
