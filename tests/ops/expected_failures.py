"""Known gaps of the op suite, in one place, each with its reason.

Key: (test node name without the backend part, backend). The backend parameter is
removed from the node id's brackets, so ``test_conv2d[same-relu6-webgpu]`` (or
``test_conv2d[webgpu-same-relu6]``) becomes ``"test_conv2d[same-relu6]"``, and a test whose
only parameter is the backend (``test_add[cpu]``) becomes ``"test_add"``. Example::

    EXPECTED_FAILURES = {
        ("test_conv2d[same-relu6]", "webgpu"): "RELU6 fusion not in the WGSL conv kernel yet (issue 12)",
    }

Listed cases are marked ``xfail(strict=True)``: when one starts passing the suite fails,
so the entry gets removed rather than left to rot.
"""

from __future__ import annotations

EXPECTED_FAILURES: dict[tuple[str, str], str] = {}
