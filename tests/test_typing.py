"""mypy is clean on the typed core: the model reader, the graph IR, the backend contract and the runtime owner."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TYPED = ["gpulite/model", "gpulite/graph", "gpulite/backends/base.py", "gpulite/runtime.py"]


def test_mypy_is_clean_on_the_typed_core(tmp_path):
    env = {**os.environ, "MYPY_CACHE_DIR": str(tmp_path / "mypy_cache")}
    r = subprocess.run([sys.executable, "-m", "mypy", *TYPED], cwd=ROOT, capture_output=True, text=True,
                       env=env, timeout=600)
    assert r.returncode == 0, f"mypy found errors (mypy is in the 'test' extra):\n{r.stdout}{r.stderr}"
