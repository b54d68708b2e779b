"""Calculators used by the pipeline framework tests (registered under Test* names)."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import Any

from gpulite.pipeline import Calculator, CalculatorContext, register_calculator


@dataclass(frozen=True)
class ScaleOptions:
    factor: float = 2.0


@register_calculator
class TestScale(Calculator):
    """Multiplies numbers: ``b.node("TestScale", inputs={"IN": "x"}, outputs={"OUT": "y"}, options={"factor": 3})``."""

    inputs = {"IN": float}
    outputs = {"OUT": float}
    options = ScaleOptions

    def process(self, cc: CalculatorContext) -> None:
        cc.output("OUT", cc.inputs["IN"] * cc.options.factor)


@register_calculator
class TestText(Calculator):
    """Emits ``str(x)``; its output type (str) does not fit a float input."""

    inputs = {"IN": Any}
    outputs = {"OUT": str}

    def process(self, cc: CalculatorContext) -> None:
        cc.output("OUT", str(cc.inputs["IN"]))


@register_calculator
class TestJoin(Calculator):
    """Pairs ``A`` and ``B`` at one timestamp: emits ``(a, b)`` with None for an absent input."""

    inputs = {"A": Any, "B": Any}
    outputs = {"OUT": tuple}

    def process(self, cc: CalculatorContext) -> None:
        cc.output("OUT", (cc.inputs["A"], cc.inputs["B"]))


@dataclass(frozen=True)
class GateOptions:
    every: int = 2
    gate: Any = None            # a threading.Event to wait on before each process
    sleep_s: float = 0.0


@register_calculator
class TestEvery(Calculator):
    """Passes packets whose timestamp is a multiple of ``every``; emits nothing for the others."""

    inputs = {"IN": Any}
    outputs = {"OUT": Any}
    options = GateOptions

    def process(self, cc: CalculatorContext) -> None:
        if cc.options.gate is not None:
            assert cc.options.gate.wait(10), "test gate never opened"
        if cc.options.sleep_s:
            time.sleep(cc.options.sleep_s)
        if cc.timestamp % cc.options.every == 0:
            cc.output("OUT", cc.inputs["IN"])


@dataclass(frozen=True)
class RecordOptions:
    log: list = field(default_factory=list)
    fail_at: int | None = None


@register_calculator
class TestRecord(Calculator):
    """Records open/process/close into ``options.log``; raises at ``fail_at``; emits a count at close."""

    inputs = {"IN": Any}
    outputs = {"OUT": Any, "COUNT": int}
    options = RecordOptions

    def open(self, cc: CalculatorContext) -> None:
        cc.options.log.append(("open", threading.current_thread().name))
        self.n = 0

    def process(self, cc: CalculatorContext) -> None:
        if cc.timestamp == cc.options.fail_at:
            raise ValueError(f"injected failure at {cc.timestamp}")
        self.n += 1
        cc.options.log.append(("process", cc.timestamp))
        cc.output("OUT", cc.inputs["IN"])

    def close(self, cc: CalculatorContext) -> None:
        cc.options.log.append(("close", cc.timestamp))
        cc.output("COUNT", self.n)


@dataclass(frozen=True)
class CountOptions:
    n: int = 5


@register_calculator
class TestCounter(Calculator):
    """A source: emits 0..n-1 at timestamps 0..n-1, then stops."""

    outputs = {"OUT": int}
    options = CountOptions

    def process(self, cc: CalculatorContext) -> None:
        if cc.timestamp >= cc.options.n:
            cc.stop()
            return
        cc.output("OUT", cc.timestamp)
