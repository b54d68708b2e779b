"""``gpulite.tasks.python``: MediaPipe's module path (``mediapipe.tasks.python``) for gpulite's Tasks.

MediaPipe's Tasks live under ``mediapipe.tasks.python``; gpulite's under ``gpulite.tasks``. So that
code written for MediaPipe runs after replacing ``mediapipe`` with ``gpulite`` in its imports,
every module ``gpulite.tasks.python.X`` *is* ``gpulite.tasks.X`` (the same module object, not a
copy: ``from gpulite.tasks.python.components.containers import landmark`` gives the classes the
tasks return), through a finder that answers for names under this package.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

_HERE = __name__                        # "gpulite.tasks.python"
_REAL = _HERE.rpartition(".")[0]        # "gpulite.tasks"


class _AliasFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports ``gpulite.tasks.python.X`` as the module ``gpulite.tasks.X``."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(_HERE + "."):
            return None
        real = _REAL + fullname[len(_HERE):]
        if importlib.util.find_spec(real) is None:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(_REAL + spec.name[len(_HERE):])
        self._specs[module.__name__] = module.__spec__
        return module

    def exec_module(self, module: ModuleType) -> None:
        # importlib put the alias's spec on the real module: give it back its own
        module.__spec__ = self._specs[module.__name__]

    def __init__(self) -> None:
        self._specs: dict[str, Any] = {}


# first on the path: the parent of an alias is a real package, whose own path would load a copy
if not any(isinstance(f, _AliasFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _AliasFinder())

from gpulite.tasks import components, core, vision  # noqa: E402
from gpulite.tasks.core.base_options import BaseOptions  # noqa: E402

__all__ = ["BaseOptions", "components", "core", "vision"]
