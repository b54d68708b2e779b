"""CONV_3D, CONV_3D_TRANSPOSE and L2_POOL_2D against LiteRT: padding, strides, dilations, bias, activations."""

from __future__ import annotations

import zlib

import numpy as np
import pytest

from tests.ops.harness import check_op
from tests.ops.single_op import C, In, single_op


def _rng(*key) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32("-".join(map(str, key)).encode()))


# name: (input shape, filter shape, padding, strides (d, h, w), dilations (d, h, w), bias, activation)
CASES = {
    "same": ((1, 4, 5, 6, 3), (3, 3, 3, 3, 4), "SAME", (1, 1, 1), (1, 1, 1), True, "NONE"),
    "valid-strided": ((2, 6, 7, 5, 2), (2, 3, 2, 2, 3), "VALID", (2, 2, 1), (1, 1, 1), True, "RELU"),
    "same-strided-odd": ((1, 5, 6, 7, 2), (3, 2, 3, 2, 5), "SAME", (2, 3, 2), (1, 1, 1), False, "RELU6"),
    "dilated": ((1, 7, 8, 6, 2), (2, 3, 2, 2, 2), "SAME", (1, 1, 1), (2, 2, 3), True, "RELU_N1_TO_1"),
    "pointwise": ((1, 3, 4, 4, 8), (1, 1, 1, 8, 6), "VALID", (1, 1, 1), (1, 1, 1), True, "NONE"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_conv3d(case: str, backend: str) -> None:
    x_shape, f_shape, padding, strides, dilations, bias, act = CASES[case]
    rng = _rng("conv3d", case)
    x = rng.standard_normal(x_shape).astype(np.float32)
    ins = [In(x), C(rng.standard_normal(f_shape).astype(np.float32) * 0.3)]
    if bias:
        ins.append(C(rng.standard_normal(f_shape[-1]).astype(np.float32)))
    check_op(*single_op("CONV_3D", ins, padding=padding, stride_d=strides[0], stride_h=strides[1],
                        stride_w=strides[2], dilation_d_factor=dilations[0], dilation_h_factor=dilations[1],
                        dilation_w_factor=dilations[2], fused_activation_function=act), backend)


# name: (input shape, filter [kd, kh, kw, out, in], output shape, padding, strides, dilations, bias, activation)
TRANSPOSE_CASES = {
    "same-s2": ((1, 3, 4, 5, 3), (3, 3, 3, 4, 3), (1, 6, 8, 10, 4), "SAME", (2, 2, 2), (1, 1, 1), True, "NONE"),
    "same-odd": ((2, 2, 3, 3, 2), (2, 3, 2, 3, 2), (2, 3, 5, 6, 3), "SAME", (2, 2, 2), (1, 1, 1), False, "RELU6"),
    "valid-mixed": ((1, 6, 8, 10, 4), (2, 3, 1, 2, 4), (1, 7, 17, 30, 2), "VALID", (1, 2, 3), (1, 1, 1), True,
                    "RELU"),
    "dilated": ((1, 4, 4, 3, 2), (2, 2, 3, 2, 2), (1, 5, 6, 7, 2), "VALID", (1, 1, 1), (1, 2, 2), True, "NONE"),
}


@pytest.mark.parametrize("case", list(TRANSPOSE_CASES))
def test_conv3d_transpose(case: str, backend: str) -> None:
    x_shape, f_shape, out_shape, padding, strides, dilations, bias, act = TRANSPOSE_CASES[case]
    rng = _rng("conv3d-transpose", case)
    ins = [C(np.array(out_shape, np.int32)), C(rng.standard_normal(f_shape).astype(np.float32) * 0.3),
           In(rng.standard_normal(x_shape).astype(np.float32))]
    if bias:
        ins.append(C(rng.standard_normal(f_shape[3]).astype(np.float32)))
    check_op(*single_op("CONV_3D_TRANSPOSE", ins, out_dtype=np.float32, padding=padding, stride_d=strides[0],
                        stride_h=strides[1], stride_w=strides[2], dilation_d_factor=dilations[0],
                        dilation_h_factor=dilations[1], dilation_w_factor=dilations[2],
                        fused_activation_function=act), backend)


# L2_POOL_2D (float32): (input shape, filter (h, w), strides (h, w), padding, activation)
L2_POOL_CASES = {"same-3x3": ((1, 7, 9, 3), (3, 3), (2, 2), "SAME", "NONE"),
                 "valid-2x2": ((2, 6, 6, 4), (2, 2), (2, 2), "VALID", "RELU6"),
                 "same-big": ((1, 10, 11, 2), (5, 4), (1, 3), "SAME", "NONE")}


@pytest.mark.parametrize("case", list(L2_POOL_CASES))
def test_l2_pool_2d(case: str, backend: str) -> None:
    shape, (fh, fw), (sh, sw), padding, act = L2_POOL_CASES[case]
    x = (_rng("l2pool", case).standard_normal(shape) * 2).astype(np.float32)
    check_op(*single_op("L2_POOL_2D", [In(x)], padding=padding, filter_height=fh, filter_width=fw, stride_h=sh,
                        stride_w=sw, fused_activation_function=act), backend)
