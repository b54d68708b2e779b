"""Which WebGPU kernels run int8-quantized nodes themselves under ``quantized="exact"``, bit-equal
to LiteRT (``gpulite ops``' *webgpu exact* column; elsewhere such a node runs on the CPU fallback).

Declared here in one call for the kernels that move codes (input and output share the
quantization, so the bytes move unchanged); a kernel doing integer arithmetic declares itself
with ``register_kernel(op, "webgpu", int8=True)`` or beside its ``register_case``.
``tests/test_ops_table.py`` runs int8 single-op models for a sample and checks the claim.
"""

from __future__ import annotations

from gpulite.backends.kernels import declare_int8
from gpulite.model.opdefs import Op

INT8_OPS = (
    # data movement of codes (input and output share the quantization)
    Op.RESHAPE, Op.SQUEEZE, Op.EXPAND_DIMS, Op.TRANSPOSE, Op.PAD, Op.PADV2, Op.MIRROR_PAD, Op.SLICE,
    Op.STRIDED_SLICE, Op.PACK, Op.UNPACK, Op.SPLIT, Op.SPLIT_V, Op.TILE, Op.BROADCAST_TO, Op.REVERSE_V2,
    Op.DEPTH_TO_SPACE, Op.SPACE_TO_DEPTH, Op.SPACE_TO_BATCH_ND, Op.BATCH_TO_SPACE_ND, Op.GATHER,
    Op.GATHER_ND, Op.EMBEDDING_LOOKUP, Op.CONCATENATION, Op.SELECT, Op.SELECT_V2, Op.RESIZE_NEAREST_NEIGHBOR,
    Op.ARG_MAX, Op.ARG_MIN, Op.FILL,
    # reads the codes, as LiteRT's cast.cc (scales ignored)
    Op.CAST,
)
declare_int8("webgpu", *INT8_OPS)
