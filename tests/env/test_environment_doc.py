"""docs/environment.md's first example runs as written, on an RGB uint8 frame (issue 24: it failed
with ``resize_bilinear expects float32``)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

ROOT = Path(__file__).resolve().parents[2]


def test_the_first_example_runs_on_a_uint8_frame():
    import gpulite

    if gpulite.find_backend("webgpu") is None:
        pytest.skip("the example runs on the webgpu backend, which cannot start here")
    code = re.search(r"```python\n(.*?)```", (ROOT / "docs" / "environment.md").read_text(), re.S).group(1)
    frame = np.asarray(Image.open(ROOT / "gpulite" / "data" / "astronaut.png").convert("RGB"))
    assert frame.dtype == np.uint8
    before = gpulite.get_backend()
    names: dict = {"frame": frame}
    try:
        exec(compile(code, "docs/environment.md", "exec"), names)
        scores = names["it"].get_tensor(names["it"].get_output_details()[1]["index"])
        assert scores.shape == (1, 896, 1) and np.isfinite(scores).all()
    finally:
        if names.get("x") is not None:
            names["x"].dispose()
        gpulite.set_backend(before)
