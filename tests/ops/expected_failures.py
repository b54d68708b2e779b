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
whose base name matches a pattern is instead expected to fail with ``NotOnGpu`` (and only with
that: its values are still compared first, so the CPU fallback must be right). In a pattern
``*`` matches anything and everything else is literal (brackets included). The first match
wins. An entry whose test function is collected but matches no case is reported as stale.
"""

from __future__ import annotations

import re

EXPECTED_FAILURES: dict[tuple[str, str], str] = {}

# --- elementwise / activations (tests/ops/test_activations.py) ---
_XNN_SIGMOID_NAN = ("LiteRT's default interpreter runs float LOGISTIC in XNNPACK, whose sigmoid returns NaN "
                    "for |x| >= ~1e30; its builtin kernel, like gpulite, gives 0 and 1")
EXPECTED_FAILURES[("test_logistic_huge_inputs", "cpu")] = _XNN_SIGMOID_NAN
EXPECTED_FAILURES[("test_logistic_huge_inputs", "webgpu")] = _XNN_SIGMOID_NAN

GPU_GAPS: list[tuple[str, str]] = [
]


def _regex(pattern: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in pattern.split("*")))


_GAP_RES = [(_regex(p), p, why) for p, why in GPU_GAPS]


def gpu_gap(base_name: str) -> tuple[str, str] | None:
    """``(pattern, reason)`` of the first ``GPU_GAPS`` entry matching ``base_name``, or None."""
    for rx, pattern, why in _GAP_RES:
        if rx.fullmatch(base_name):
            return pattern, why
    return None
