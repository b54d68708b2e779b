"""Operator coverage: every LiteRT builtin op x cpu / webgpu x float / int8 (``gpulite ops``).

Read from the kernel registry, not from a probe: an op is covered on a backend for float
models when the backend registers a kernel for it (which may still decline some dtypes or
options at ``allocate_tensors``; the op suite says which). int8 coverage:

- cpu: the kernel declares it runs int8-quantized tensors (``register_kernel(..., int8=True)``
  or ``declare_int8``; ``backends/cpu/kernels/int8_ops.py``). An undeclared kernel shows as
  float only.
- webgpu: under ``quantized="float"`` (the default) a quantized model's tensors are computed
  in float32 (``backends/webgpu/quantized.py``), so every op with a WebGPU kernel runs in an
  int8 model, except the ops that read codes rather than values (``RAW_OPS``), which need a
  declared kernel (QUANTIZE, DEQUANTIZE).
- webgpu exact: under ``quantized="exact"`` the WebGPU kernel runs the int8 node itself, bit-equal
  to LiteRT's integer kernels (declared like the cpu's: ``register_kernel(..., int8=True)`` or
  ``backends/webgpu/kernels/int8_ops.py``); otherwise the node runs on the CPU fallback.

``n/a``: the op's tensors are never quantized (bool, shape and index ops, and ops whose LiteRT
kernels take no int8, uint8 or int16 tensors: :data:`~gpulite.model.opdefs.LITERT_FLOAT_ONLY`,
which every backend refuses quantized).
:func:`markdown` renders docs/ops.md from the same rows.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpulite.backends.kernels import get_kernel, takes_int8
from gpulite.model.opdefs import LITERT_FLOAT_ONLY, RAW_OPS, Op

BACKENDS = ("cpu", "webgpu")
# Codes in the op table that are no operators a model runs.
NOT_OPERATORS = frozenset({Op.CUSTOM, Op.DELEGATE, Op.PLACEHOLDER_FOR_GREATER_OP_CODES})
# Ops whose tensors are never quantized: the int8 columns do not apply.
NOT_QUANTIZED = frozenset({Op.LOGICAL_AND, Op.LOGICAL_OR, Op.LOGICAL_NOT, Op.SHAPE, Op.RANK, Op.RANGE,
                           Op.BROADCAST_ARGS, Op.WHERE, Op.ONE_HOT, Op.VAR_HANDLE, Op.CALL_ONCE,
                           Op.IMAG, Op.REAL, Op.COMPLEX_ABS}) | LITERT_FLOAT_ONLY  # complex64/128 inputs
# Why an op is not covered, by name prefix (the first match wins).
_WHY_NOT = (
    ("STABLEHLO_", "StableHLO op (JAX / ai-edge-torch StableHLO export, not TFLiteConverter's builtins)"),
    (("LSH_PROJECTION", "SKIP_GRAM", "EMBEDDING_LOOKUP_SPARSE", "CONCAT_EMBEDDINGS", "HASHTABLE_LOOKUP"),
     "legacy text / hashing op (string and sparse inputs)"),
    (("HASHTABLE", "VAR_HANDLE", "READ_VARIABLE", "ASSIGN_VARIABLE"), "stateful resource / variable op"),
    (("RANDOM_", "MULTINOMIAL"), "random sampling (LiteRT's generator state cannot be matched)"),
    (("IF", "WHILE", "CALL", "CALL_ONCE"), "control flow over subgraphs"),
    (("WHERE", "NON_MAX_SUPPRESSION", "TOPK_V2", "UNIQUE"), "data-dependent output"),
)
# On webgpu: CPU by design (data-dependent shapes or sequential loops), per the issue.
_CPU_BY_DESIGN = frozenset({Op.WHERE, Op.NON_MAX_SUPPRESSION_V4, Op.NON_MAX_SUPPRESSION_V5, Op.UNIQUE,
                            Op.WHILE, Op.IF, Op.CALL_ONCE, Op.SHAPE, Op.RANK})


@dataclass(frozen=True)
class Row:
    """One op's coverage: for each backend, float (bool) and int8 (``"yes"``, ``"no"``, ``"n/a"``);
    ``webgpu_exact``: int8 on the GPU under ``quantized="exact"``."""

    op: Op
    cpu_float: bool
    cpu_int8: str
    webgpu_float: bool
    webgpu_int8: str
    webgpu_exact: str

    @property
    def why(self) -> str:
        """Why the op is not (fully) covered; empty when it runs on both backends."""
        if self.cpu_float and self.webgpu_float:
            return ""
        if self.webgpu_float:
            return "cpu: no kernel yet (the webgpu kernel runs it)"
        if self.cpu_float:
            if self.op in _CPU_BY_DESIGN:
                return "webgpu: runs on the CPU fallback by design (data-dependent shapes or sequential loops)"
            return "webgpu: no WebGPU kernel yet; runs on the CPU fallback"
        for prefixes, why in _WHY_NOT:
            if self.op.value.startswith(prefixes):
                return f"{why}: not implemented"
        return "not implemented yet"


def builtin_ops() -> list[Op]:
    """LiteRT's builtin operators (the schema's BuiltinOperator, less CUSTOM/DELEGATE/placeholder)."""
    return [op for op in Op if not op.is_custom and op not in NOT_OPERATORS]


def row(op: Op) -> Row:
    cpu, gpu = get_kernel(op, "cpu") is not None, get_kernel(op, "webgpu") is not None

    def int8(backend_has: bool, declared: bool) -> str:
        if op in NOT_QUANTIZED:
            return "n/a"
        return "yes" if backend_has and declared else "no"
    return Row(op, cpu, int8(cpu, takes_int8(op, "cpu")), gpu,
               int8(gpu, takes_int8(op, "webgpu") or op not in RAW_OPS), int8(gpu, takes_int8(op, "webgpu")))


def table() -> list[Row]:
    """One :class:`Row` per builtin op, in the schema's order."""
    return [row(op) for op in builtin_ops()]


def summary(rows: list[Row] | None = None) -> str:
    """The README sentence: "N of LiteRT's M builtin ops on cpu, K on webgpu"."""
    rows = table() if rows is None else rows
    cpu = sum(r.cpu_float for r in rows)
    gpu = sum(r.webgpu_float for r in rows)
    return f"{cpu} of LiteRT's {len(rows)} builtin ops on cpu, {gpu} on webgpu"


def _mark(v: bool | str) -> str:
    return ("yes" if v else "no") if isinstance(v, bool) else v


def text(rows: list[Row] | None = None) -> list[str]:
    """The table as aligned text lines (``gpulite ops``)."""
    rows = table() if rows is None else rows
    w = max(len(r.op.value) for r in rows)
    out = [f"{'op':<{w}}  cpu:float  cpu:int8  webgpu:float  webgpu:int8  webgpu:exact", "-" * (w + 62)]
    out += [f"{r.op.value:<{w}}  {_mark(r.cpu_float):<9}  {r.cpu_int8:<8}  {_mark(r.webgpu_float):<12}  "
            f"{r.webgpu_int8:<11}  {r.webgpu_exact}" for r in rows]
    return [*out, "", summary(rows)]


def markdown(rows: list[Row] | None = None) -> str:
    """docs/ops.md: the summary, the full table, and what is not covered and why."""
    rows = table() if rows is None else rows
    lines = [
        "# Operator coverage",
        "",
        "Generated by `gpulite ops --markdown > docs/ops.md` from the kernel registry",
        "(`gpulite/backends/coverage.py`); `tests/test_ops_table.py` checks this file is current.",
        "",
        f"**{summary(rows)}.**",
        "",
        "- *float*: the backend has a kernel for the op (it may still decline some dtypes or",
        "  options at `allocate_tensors`, with an `UnsupportedOpError` naming op, node and reason;",
        "  on webgpu the node then runs on the CPU fallback and `gpulite inspect --backend webgpu` says why).",
        "- *int8*: the op runs in int8-quantized models. cpu: LiteRT's integer arithmetic (kernels",
        "  declared with `register_kernel(..., int8=True)` or in `backends/cpu/kernels/int8_ops.py`).",
        "  webgpu: computed in float32 with weights dequantized at load (`quantized=\"float\"`, the",
        "  default; docs/webgpu.md, \"Quantized models\").",
        "- *webgpu exact*: under `quantized=\"exact\"` the op's int8 nodes run on the GPU with LiteRT's",
        "  integer arithmetic, bit-equal to it (kernels declared with `register_kernel(..., int8=True)` or",
        "  in `backends/webgpu/kernels/int8_ops.py`); *no*: they run on the CPU fallback.",
        "  *n/a*: the op's tensors are never quantized (bool, shape and index ops, and ops whose LiteRT kernels",
        "  refuse int8, uint8 and int16 tensors alike, e.g. FLOOR, SIN, CUMSUM; `tests/ops/test_int8_codes.py`).",
        "",
        "| op | cpu float | cpu int8 | webgpu float | webgpu int8 | webgpu exact |",
        "|---|---|---|---|---|---|",
    ]
    lines += [f"| {r.op.value} | {_mark(r.cpu_float)} | {r.cpu_int8} | {_mark(r.webgpu_float)} | {r.webgpu_int8} "
              f"| {r.webgpu_exact} |" for r in rows]
    lines += ["", "## Not covered, and why", "", "| op | why |", "|---|---|"]
    lines += [f"| {r.op.value} | {r.why} |" for r in rows if r.why]
    return "\n".join(lines) + "\n"
