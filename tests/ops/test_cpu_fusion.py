"""CPU fusions (gpulite/graph/fusion.py with backends/cpu/fusion_rules.py) give LiteRT's numbers on small chains.

Each model is a short chain built with the tflite writer; it runs in gpulite with and
without the rewrites (GPULITE_CPU_FUSE=0) and in LiteRT, and the rewrite must actually
have happened (checked on the executable's step names).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

from gpulite import Interpreter
from gpulite.testing.tflite_writer import ModelBuilder

RNG = np.random.default_rng(7)


def _w(*shape, scale=0.3):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def _conv(mb, x, cin, cout, k, shape_out, stride=1, padding="SAME", act="NONE", bias=True):
    w = mb.const(f"w{len(mb._tensors)}", _w(cout, k, k, cin))
    b = mb.const(f"b{len(mb._tensors)}", _w(cout)) if bias else -1
    y = mb.tensor(f"t{len(mb._tensors)}", shape_out, np.float32)
    mb.op("CONV_2D", [x, w, b], [y], padding=padding, stride_w=stride, stride_h=stride,
          fused_activation_function=act)
    return y


def _dw(mb, x, c, k, shape_out, stride=1, padding="SAME", act="NONE"):
    w = mb.const(f"w{len(mb._tensors)}", _w(1, k, k, c))
    b = mb.const(f"b{len(mb._tensors)}", _w(c))
    y = mb.tensor(f"t{len(mb._tensors)}", shape_out, np.float32)
    mb.op("DEPTHWISE_CONV_2D", [x, w, b], [y], padding=padding, stride_w=stride, stride_h=stride,
          depth_multiplier=1, fused_activation_function=act)
    return y


def _pad(mb, x, pads, shape_out):
    p = mb.const(f"p{len(mb._tensors)}", np.array(pads, np.int32))
    y = mb.tensor(f"t{len(mb._tensors)}", shape_out, np.float32)
    mb.op("PAD", [x, p], [y])
    return y


def _binary(mb, op, a, b, shape, act="NONE"):
    y = mb.tensor(f"t{len(mb._tensors)}", shape, np.float32)
    mb.op(op, [a, b], [y], fused_activation_function=act)
    return y


def _prelu(mb, x, c, shape, two_sided=True):
    alpha = _w(1, 1, c, scale=1.0) if two_sided else np.abs(_w(1, 1, c, scale=0.2))
    a = mb.const(f"a{len(mb._tensors)}", alpha)
    y = mb.tensor(f"t{len(mb._tensors)}", shape, np.float32)
    mb.op("PRELU", [x, a], [y])
    return y


def _unary(mb, op, x, shape):
    y = mb.tensor(f"t{len(mb._tensors)}", shape, np.float32)
    mb.op(op, [x], [y])
    return y


def pad_dw_conv_res_prelu():
    """PAD(spatial) -> DW s2 VALID -> 1x1 CONV (dw bias folded) + channel-PADded residual -> PRELU."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 16, 16, 8), np.float32)
    pool = mb.tensor("pool", (1, 8, 8, 8), np.float32)
    mb.op("MAX_POOL_2D", [x], [pool], padding="VALID", stride_w=2, stride_h=2, filter_width=2, filter_height=2)
    r = _pad(mb, pool, [[0, 0], [0, 0], [0, 0], [0, 4]], (1, 8, 8, 12))
    p = _pad(mb, x, [[0, 0], [0, 1], [0, 1], [0, 0]], (1, 17, 17, 8))
    d = _dw(mb, p, 8, 3, (1, 8, 8, 8), stride=2, padding="VALID")
    c = _conv(mb, d, 8, 12, 1, (1, 8, 8, 12))
    a = _binary(mb, "ADD", c, r, (1, 8, 8, 12))
    y = _prelu(mb, a, 12, (1, 8, 8, 12))
    mb.output(y)
    return mb.build(), ("+pad", "+add", "+prelu")


def mobilenet_block():
    """1x1 CONV RELU6 -> PAD -> DW RELU6 -> 1x1 CONV + residual ADD (RELU) -> HARD_SWISH."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 20, 20, 16), np.float32)
    e = _conv(mb, x, 16, 48, 1, (1, 20, 20, 48), act="RELU6")
    p = _pad(mb, e, [[0, 0], [2, 2], [2, 2], [0, 0]], (1, 24, 24, 48))
    d = _dw(mb, p, 48, 5, (1, 20, 20, 48), padding="VALID", act="RELU6")
    c = _conv(mb, d, 48, 16, 1, (1, 20, 20, 16))
    a = _binary(mb, "ADD", x, c, (1, 20, 20, 16), act="RELU")
    y = _unary(mb, "HARD_SWISH", a, (1, 20, 20, 16))
    mb.output(y)
    return mb.build(), ("+pad", "+add+act+hard_swish")


def shared_dw_output():
    """A DW without activation read by two 1x1 convs (bias folded into both) and a 3x3 conv
    (which pads: no folding then) -> the three outputs are graph outputs."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 12, 12, 8), np.float32)
    d = _dw(mb, x, 8, 3, (1, 12, 12, 8))
    c1 = _conv(mb, d, 8, 4, 1, (1, 12, 12, 4))
    c2 = _conv(mb, d, 8, 6, 1, (1, 12, 12, 6))
    mb.output(c1, c2)
    mb2 = ModelBuilder()
    x2 = mb2.input("x", (1, 12, 12, 8), np.float32)
    d2 = _dw(mb2, x2, 8, 3, (1, 12, 12, 8))
    c3 = _conv(mb2, d2, 8, 4, 1, (1, 12, 12, 4))
    c4 = _conv(mb2, d2, 8, 4, 3, (1, 12, 12, 4))
    mb2.output(c3, c4)
    return [(mb.build(), ()), (mb2.build(), ())]


def conv_chain_logistic():
    """3x3 CONV (im2col, bias in the GEMM) -> PRELU (one-sided) -> 3x3 s2 conv -> LOGISTIC;
    and a single-output 3x3 conv head + residual."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 33, 31, 3), np.float32)
    c = _conv(mb, x, 3, 16, 3, (1, 33, 31, 16))
    p = _prelu(mb, c, 16, (1, 33, 31, 16), two_sided=False)
    c2 = _conv(mb, p, 16, 8, 3, (1, 17, 16, 8), stride=2)
    y = _unary(mb, "LOGISTIC", c2, (1, 17, 16, 8))
    h = _conv(mb, p, 16, 1, 3, (1, 33, 31, 1))
    z = _binary(mb, "ADD", h, h, (1, 33, 31, 1))  # the same tensor twice: not fused
    mb.output(y, z)
    return mb.build(), ("+prelu", "+logistic")


def residual_computed_later():
    """ADD whose other operand is computed after the conv: the ADD must not be fused."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 8, 8, 8), np.float32)
    c = _conv(mb, x, 8, 8, 1, (1, 8, 8, 8))
    r = _unary(mb, "RELU", x, (1, 8, 8, 8))
    a = _binary(mb, "ADD", c, r, (1, 8, 8, 8))
    mb.output(a)
    return mb.build(), ()


def residual_relu_into_two_dws():
    """1x1 CONV + residual ADD (RELU) read by two depthwise convs (s1 SAME, s2 VALID after a
    PAD): the ADD's clamp moves into both depthwise input copies."""
    mb = ModelBuilder()
    x = mb.input("x", (1, 10, 10, 8), np.float32)
    c = _conv(mb, x, 8, 8, 1, (1, 10, 10, 8))
    a = _binary(mb, "ADD", c, x, (1, 10, 10, 8), act="RELU")
    d1 = _dw(mb, a, 8, 3, (1, 10, 10, 8))
    p = _pad(mb, a, [[0, 0], [0, 1], [0, 1], [0, 0]], (1, 11, 11, 8))
    d2 = _dw(mb, p, 8, 3, (1, 5, 5, 8), stride=2, padding="VALID", act="RELU6")
    mb.output(d1, d2)
    return mb.build(), ("+add",)


CASES = {
    "residual_relu_into_two_dws": residual_relu_into_two_dws,
    "pad_dw_conv_res_prelu": pad_dw_conv_res_prelu,
    "mobilenet_block": mobilenet_block,
    "conv_chain_logistic": conv_chain_logistic,
    "residual_computed_later": residual_computed_later,
}


def _expand():
    for name, fn in CASES.items():
        yield name, fn()
    for k, case in enumerate(shared_dw_output()):
        yield f"shared_dw_output_{k}", case


def _run(it, xs):
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), xs, strict=True):
        it.set_tensor(d["index"], x)
    it.invoke()
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name,case", list(_expand()), ids=[n for n, _ in _expand()])
def test_fused_chain_matches_litert(name, case, threads, monkeypatch):
    from ai_edge_litert.interpreter import Interpreter as LiteRT

    model, marks = case
    ref = LiteRT(model_content=model)
    ref.allocate_tensors()
    xs = [RNG.uniform(-2, 2, tuple(d["shape"])).astype(np.float32) for d in ref.get_input_details()]
    for d, x in zip(ref.get_input_details(), xs, strict=True):
        ref.set_tensor(d["index"], x)
    ref.invoke()
    want = [ref.get_tensor(d["index"]) for d in ref.get_output_details()]
    fused = Interpreter(model_content=model, num_threads=threads)
    got = _run(fused, xs)
    names = " ".join(fused._exe.step_names)
    for m in marks:
        assert m in names, f"expected a {m} rewrite in {names}"
    monkeypatch.setenv("GPULITE_CPU_FUSE", "0")
    plain = _run(Interpreter(model_content=model, num_threads=threads), xs)
    for g, p, w in zip(got, plain, want, strict=True):
        tol = 1e-4 * max(1.0, float(np.abs(w).max()))
        assert np.abs(g - w).max() <= tol
        assert np.abs(p - w).max() <= tol
        assert np.abs(g - p).max() <= tol


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", "/work/main")
    raise SystemExit(pytest.main([__file__, "-q", "-p", "no:cacheprovider"]))
