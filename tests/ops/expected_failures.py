"""Known gaps of the op suite, in one place, each with its reason.

Two tables, both applied by ``tests/ops/conftest.py`` as ``xfail(strict=True)``: when a
listed case starts passing the suite fails, so the entry gets removed rather than left to rot.

``EXPECTED_FAILURES``: a case that fails for any reason (e.g. the oracle is wrong). Key:
(test node name without the backend part, backend). The backend parameter is removed from
the node id's brackets, so ``test_conv2d[same-relu6-webgpu]`` becomes
``"test_conv2d[same-relu6]"``, and a test whose only parameter is the backend
(``test_add[webgpu]``) becomes ``"test_add"``.

``GPU_GAPS``: **the** table of WebGPU gaps, ``(pattern, reason)``. Every webgpu case must run
all of its nodes on the GPU (``tests/ops/harness.py``: no CPU partition, no crossing); a case
matching a pattern is instead expected to fail with ``NotOnGpuError`` (and only with that: its
values are still compared first, so the CPU fallback must be right). Patterns match
``"<file>::<base name>"``, e.g. ``"test_conv.py::test_conv2d_quantized[k1-s1-valid-int8-per-tensor]"``;
``*`` matches anything and everything else is literal (brackets included). The first match
wins. An entry whose test function is collected but matches no case fails the collection as
stale, so the table cannot keep entries for kernels that now exist.
"""

from __future__ import annotations

import re

EXPECTED_FAILURES: dict[tuple[str, str], str] = {}

# --- elementwise / activations (tests/ops/test_activations.py) ---
_XNN_SIGMOID_NAN = ("LiteRT's default interpreter runs float LOGISTIC in XNNPACK, whose sigmoid returns NaN "
                    "for |x| >= ~1e30; its builtin kernel, like gpulite, gives 0 and 1")
EXPECTED_FAILURES[("test_logistic_huge_inputs", "cpu")] = _XNN_SIGMOID_NAN
EXPECTED_FAILURES[("test_logistic_huge_inputs", "webgpu")] = _XNN_SIGMOID_NAN

_CPU_ONLY = "no WebGPU kernel yet (added on the cpu by issue 12's operator work); runs on the CPU fallback"
_INT8 = ("exact integer arithmetic runs on the CPU fallback: the suite runs webgpu with quantized='exact' "
         "(quantized='float', the default, computes these on the GPU in float32 within a few quantization "
         "steps; tests/webgpu/test_quantized.py)")
GPU_GAPS: list[tuple[str, str]] = [
    # -- quantized arithmetic: the GPU kernels compute in float32 / int32 only --
    # -- int64 arithmetic --
    ("test_elementwise.py::test_binary_integer[int64-*]",
     "int64 ADD / SUB / MUL / MAXIMUM / MINIMUM: WGSL has no 64-bit integers; runs on the CPU fallback"),
    ("test_reduce.py::test_reduce_int[int64-*]",
     "int64 MEAN / SUM / REDUCE_MAX: WGSL has no 64-bit integers; runs on the CPU fallback"),
    # -- ops with a CPU kernel only so far (issue 12): the WebGPU backend runs them on the CPU fallback --
    # -- dynamic-range (hybrid: float activations, int8 weights) ops: the WebGPU kernels take float32 weights --
    ("test_hybrid.py::test_hybrid_fully_connected[*]",
     "hybrid FULLY_CONNECTED (int8 weights): runs on the CPU fallback"),
    ("test_hybrid.py::test_hybrid_conv2d[*]", "hybrid CONV_2D (int8 filter): runs on the CPU fallback"),
    ("test_hybrid.py::test_hybrid_grouped_conv2d[*]", "hybrid grouped CONV_2D (int8 filter): runs on the CPU fallback"),
    ("test_hybrid.py::test_hybrid_conv2d_with_fused_pad_and_epilogue",
     "hybrid CONV_2D (int8 filter): runs on the CPU fallback"),
    ("test_hybrid.py::test_hybrid_depthwise[*]", "hybrid DEPTHWISE_CONV_2D (int8 filter): runs on the CPU fallback"),
    ("test_hybrid.py::test_hybrid_batch_matmul[*]", "hybrid BATCH_MATMUL (int8 RHS): runs on the CPU fallback"),
    ("test_fc.py::test_fc_rescale_ties_match_default_litert[int8-bias-at-run-time]",
     "integer FULLY_CONNECTED with a bias computed at run time: the WebGPU kernel takes a constant bias; "
     "runs on the CPU fallback"),
    ("test_layout.py::test_concat_declared_activation_runs_as_xnnpack[*]",
     "CONCATENATION with a fused activation declared in its options (LiteRT's XNNPACK drops it): the WebGPU "
     "kernel declines it; runs on the CPU fallback"),
    ("test_int8_gaps.py::test_floor_div_mod_*", f"int8/int16 FLOOR_DIV, FLOOR_MOD: {_INT8}"),
    ("test_int8_gaps.py::test_div_*", f"int8/int16 DIV: {_INT8}"),
    *((f"test_quantized_elementwise.py::test_requantize[{_c}-*]", "int16 -> int32 and int32 -> int8/int16 QUANTIZE: "
       f"the GPU's integer QUANTIZE takes 8/16-bit codes; {_INT8}") for _c in ("int16-int32", "int32-int8",
                                                                             "int32-int16")),
    ("test_conv.py::test_transpose_conv_hybrid[*]", "hybrid TRANSPOSE_CONV (int8 filter): runs on the CPU fallback"),
    # -- 8/16-bit codes moved as LiteRT's kernels move them (issue 23): CPU kernels only --
    *((f"test_int8_codes.py::test_{_t}_quantized[*]", f"{_t.upper()} of 8/16-bit codes: {_CPU_ONLY}") for _t in (
        "matrix_diag", "matrix_set_diag", "dynamic_update_slice", "sparse_to_dense", "dilate", "reverse_sequence",
        "reduce_window", "hashtable_lookup")),
    ("test_int8_codes.py::test_bit_ops_quantized[*]", f"RIGHT_SHIFT, BITWISE_XOR: {_CPU_ONLY}"),
    ("test_int8_codes.py::test_bitcast_quantized[*]", f"BITCAST: {_CPU_ONLY}"),
    *((f"test_int8_codes.py::test_{_t}_carries_quantized_tensors[*]", f"{_t.upper()}: control flow runs its "
       "subgraphs with the cpu backend's kernels (no WebGPU control flow); runs on the CPU fallback")
      for _t in ("while", "if")),
    ("test_int8_codes.py::test_resource_variable_holds_quantized_codes[*]", "VAR_HANDLE, READ_VARIABLE, "
     "ASSIGN_VARIABLE: resource variables are host state kept by the cpu kernels; run on the CPU fallback"),
    *((f"test_int8_codes.py::test_{_t}_quantized[*]", f"8/16-bit {_t.upper()} (the GPU kernel takes float32/int32): "
       f"{_CPU_ONLY}") for _t in ("topk_v2", "scatter_nd")),
    # -- signal, detection and the remaining builtins (issue 12): CPU kernels only --
    ("test_detection.py::test_nms_*", f"NON_MAX_SUPPRESSION_V4 / V5 (a sequential selection): {_CPU_ONLY}"),
    ("test_detection.py::test_converter_nms_model[*]",
     f"NON_MAX_SUPPRESSION_V4 / V5 (a sequential selection): {_CPU_ONLY}"),
    ("test_detection.py::test_detection_postprocess[*]",
     f"TFLite_Detection_PostProcess (a sequential selection): {_CPU_ONLY}"),
    ("test_detection.py::test_ssd_head_with_postprocess",
     f"TFLite_Detection_PostProcess (a sequential selection): {_CPU_ONLY}"),
    *((f"test_tensor_ops.py::test_scatter_nd[{_c}]", f"{_d} SCATTER_ND (the WebGPU kernel takes float32/int32 "
       "updates); runs on the CPU fallback") for _c, _d in (("int64-updates", "int64"), ("bool", "bool"),
                                                           ("int8", "int8"))),
    *((f"test_tensor_ops.py::test_{_t}[*]", f"{_t.upper()}: {_CPU_ONLY}") for _t in (
        "matrix_diag",
        "matrix_set_diag", "right_shift", "bitwise_xor", "unsorted_segment", "segment_sum", "dynamic_update_slice",
        "reverse_sequence", "embedding_lookup_hybrid", "add_n", "bucketize", "fake_quant",
        "sparse_to_dense", "bitcast", "dilate", "hashtable_lookup", "reduce_window", "embedding_lookup_sparse")),
    ("test_tensor_ops.py::test_atan2", f"ATAN2: {_CPU_ONLY}"),
    *((f"test_tensor_ops.py::test_topk_v2[{_t}]", f"{_t} TOPK_V2 (the GPU kernel takes float32/int32): {_CPU_ONLY}")
      for _t in ("int8", "uint8", "int64")),
    ("test_conv3d.py::test_conv3d[*]", f"CONV_3D: {_CPU_ONLY}"),
    ("test_conv3d.py::test_conv3d_transpose[*]", f"CONV_3D_TRANSPOSE: {_CPU_ONLY}"),
    ("test_conv3d.py::test_l2_pool_2d[*]", f"L2_POOL_2D: {_CPU_ONLY}"),
    *((f"test_signal.py::test_rfft2d[*-{_p}]", f"{_p.upper()} (of RFFT2D's complex64 output): {_CPU_ONLY}")
      for _p in ("real", "imag")),
    *((f"test_converted_ops.py::test_converted_model[{_m}]", f"{_m.upper()}: {_CPU_ONLY}")
      for _m in ("conv3d", "conv3d_transpose", "unsorted_segment_max")),
    ("test_random.py::test_*", f"RANDOM_UNIFORM / RANDOM_STANDARD_NORMAL / MULTINOMIAL (a stateful generator): "
                               f"{_CPU_ONLY}"),
    ("test_tensor_ops.py::test_resized_input_follows", f"L2_NORMALIZATION, TOPK_V2, MATRIX_DIAG: {_CPU_ONLY}"),
    # -- hybrid recurrent ops (exact int8 arithmetic) and control flow (its subgraphs run on the cpu) --
    ("test_lstm.py::test_unidirectional_lstm[*-hybrid*]",
     f"hybrid UNIDIRECTIONAL_SEQUENCE_LSTM (int8 weights): {_INT8}"),
    ("test_lstm.py::test_bidirectional_lstm[*-hybrid*]", f"hybrid BIDIRECTIONAL_SEQUENCE_LSTM (int8 weights): {_INT8}"),
    ("test_lstm.py::test_unidirectional_rnn[*-hybrid*]", f"hybrid UNIDIRECTIONAL_SEQUENCE_RNN (int8 weights): {_INT8}"),
    ("test_lstm.py::test_bidirectional_rnn[*-hybrid*]", f"hybrid BIDIRECTIONAL_SEQUENCE_RNN (int8 weights): {_INT8}"),
    ("test_lstm.py::test_one_step[*-hybrid*]", f"hybrid LSTM / RNN (one step, int8 weights): {_INT8}"),
    *((f"test_control_flow.py::test_{_t}[*]", f"{_t.upper()}: control flow runs its subgraphs with the cpu "
       "backend's kernels (no WebGPU control flow); runs on the CPU fallback") for _t in ("while_loop", "if")),
    ("test_control_flow.py::test_call_once_and_resource_variables", "CALL_ONCE, VAR_HANDLE, READ_VARIABLE, "
     "ASSIGN_VARIABLE: resource variables are host state kept by the cpu kernels; run on the CPU fallback"),
    ("test_logic.py::test_where[*]", "WHERE: its output's shape depends on the data, so it runs on the cpu, which "
     "sets the shape at each invoke"),
    ("test_math.py::test_unary_integer[NEG-int64]", "int64 NEG: WGSL has no 64-bit integers; runs on the CPU"),
    ("test_math.py::test_binary[*-int32-*]",
     "int32 FLOOR_DIV / FLOOR_MOD by a run-time divisor (LiteRT fails the invoke on a zero; a shader cannot) "
     "and int32 POW (LiteRT fails the invoke on a negative exponent): run on the CPU"),
    ("test_math.py::test_binary_narrow_and_wide_ints[*]", "int8/int16/int64 FLOOR_DIV / FLOOR_MOD: the WebGPU "
     "kernels take float32/int32"),
    ("test_logic.py::test_compare_int[*int64]", "int64 comparisons: WGSL has no 64-bit integers; runs on the CPU"),
    ("test_shape_ops.py::test_range[*-runtime]", "RANGE of run-time operands: the CPU kernel checks the count "
     "against the planned size at invoke, a shader cannot (constant operands run on the GPU)"),
    ("test_shape_ops.py::test_broadcast_args[*]", f"BROADCAST_ARGS: {_CPU_ONLY}"),
    ("test_shape_ops.py::test_fill_runtime_dims_match_stored_shape",
     "FILL with run-time dims: the CPU kernel checks them against the planned shape at invoke; a shader cannot"),
    *((f"test_shape_ops.py::test_cast[{_t}]", "CAST from/to float16 and float64: no WebGPU kernel (float16 "
       "needs 2-byte packing, WGSL has no f64); runs on the CPU") for _t in ("*float16*", "float64*")),
    ("test_shape_ops.py::test_cumsum[int64-*]", "int64 CUMSUM: WGSL has no 64-bit integers; runs on the CPU"),
    ("test_shape_ops.py::test_reduce_prod_int[int64]", "int64 REDUCE_PROD: WGSL has no 64-bit integers"),
]


def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


_GAP_RES = [(_regex(p), p, why) for p, why in GPU_GAPS]


def gpu_gap(qualified_name: str) -> tuple[str, str] | None:
    """``(pattern, reason)`` of the first ``GPU_GAPS`` entry matching ``"<file>::<base name>"``."""
    for rx, pattern, why in _GAP_RES:
        if rx.fullmatch(qualified_name):
            return pattern, why
    return None


# --- reductions and matrix products: elements one thread folds (tests/ops/harness.py's
# work check after every webgpu case, tests/webgpu/test_reduction_work.py on the zoo) ---
MAX_REDUCTION_PER_THREAD = 1024
