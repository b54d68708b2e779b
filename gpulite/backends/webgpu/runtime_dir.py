"""An ``XDG_RUNTIME_DIR`` for the GPU drivers when the environment has none.

Mesa's Vulkan device-select layer (loaded with lavapipe and Mesa's GPU drivers) asks
libwayland for a display, and libwayland prints ``error: XDG_RUNTIME_DIR is invalid or not set
in the environment.`` to stderr when the variable is unset or not an absolute path, as it is
in containers, CI jobs and ``ssh`` sessions without a login manager: once per adapter probe,
eight times in ``gpulite info``. The message says nothing about the GPU. Before wgpu loads a
driver, :func:`ensure` points the variable at a private folder of this process (mode 0700,
removed at exit), where libwayland finds no display and says nothing. A variable that is
set is left alone, and every other driver message still reaches stderr.
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile

VARIABLE = "XDG_RUNTIME_DIR"


def ensure() -> str | None:
    """Set ``XDG_RUNTIME_DIR`` to a new private folder when it is unset or not absolute; returns the folder made."""
    if os.environ.get(VARIABLE, "").startswith("/"):
        return None
    folder = tempfile.mkdtemp(prefix="gpulite-runtime-")  # mkdtemp makes it 0700, as the XDG spec asks
    os.environ[VARIABLE] = folder
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
