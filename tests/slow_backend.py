"""A backend factory made deliberately slow, for the tests of ``auto`` by measurement."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any


class SlowExecutable:
    """An executable that sleeps ``seconds`` before each invoke, else the real one."""

    def __init__(self, exe: Any, seconds: float) -> None:
        self._exe, self._seconds = exe, seconds

    def __getattr__(self, name: str) -> Any:
        return getattr(self._exe, name)

    def invoke(self, observer=None):
        time.sleep(self._seconds)
        return self._exe.invoke(observer)


def slowed(factory: Callable[..., Any], seconds: float) -> Callable[..., Any]:
    """``factory``, whose backends compile executables that sleep ``seconds`` per invoke."""
    def make(**kw):
        backend = factory(**kw)
        compile_ = backend.compile
        backend.compile = lambda graph, plan: SlowExecutable(compile_(graph, plan), seconds)
        return backend
    return make
