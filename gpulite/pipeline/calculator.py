"""The calculator contract (after MediaPipe's ``calculator_base.h``), as plain class attributes.

A calculator declares typed ports, side inputs, an options dataclass and an input policy;
the graph checks every node against its calculator's contract before anything runs.
Lifecycle, per graph run: one instance per node; ``open`` once (after side inputs are set),
``process`` once per input set (never concurrently for one node), ``close`` once, also when
the run ends in an error (outputs of that ``close`` are then discarded).
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from gpulite.errors import CalculatorContractError
from gpulite.pipeline.context import CalculatorContext
from gpulite.pipeline.ports import canonical_port

POLICIES = ("default", "immediate")


class Calculator:
    """Base class of every calculator.

    Class attributes (the contract)
    -------------------------------
    inputs, outputs : dict[str, type]
        Port -> payload type (``typing.Any``, a class, a tuple of classes, ``X | None``).
        A port ``"TAG"`` also accepts indexed connections ``"TAG:1"``, ``"TAG:2"``...
    side_inputs : dict[str, type]
        Port -> type of a graph side packet (a model, a device...), set before ``open``.
    optional_ports : frozenset[str]
        Input and side-input ports that may stay unconnected (outputs may always stay unconnected).
    options : type | None
        A dataclass; the node's options mapping is converted into it (unknown keys raise).
    input_policy : str
        ``"default"``: ``process`` runs once per timestamp T when every input has a packet at T or
        has moved past T (absent inputs read ``None``). ``"immediate"``: ``process`` runs for each
        packet as it arrives (required for back-edge inputs).
    timestamp_offset : int | None
        ``0`` (default): outputs are never earlier than the inputs, so the graph advances output
        bounds as inputs advance even when nothing is emitted. ``None``: the calculator manages its
        bounds itself (emits late, or calls ``cc.set_next_timestamp_bound``).
    queues_only : bool
        True (may be set per instance in ``open``) when ``process`` never waits for the GPU and
        does little on the host: it only queues GPU work (an ``Inference`` whose outputs stay on
        the GPU, ``ImageToTensor`` on webgpu) or passes packets on (``FlowLimiter``). The
        scheduler runs such ready nodes first, so a later frame's GPU work is queued before an
        earlier frame's results are read back (overlap; ``GraphSession.feed``).

    Examples
    --------
    >>> @register_calculator
    ... class Scale(Calculator):
    ...     inputs = {"IN": float}
    ...     outputs = {"OUT": float}
    ...     options = ScaleOptions
    ...     def process(self, cc):
    ...         cc.output("OUT", cc.inputs["IN"] * cc.options.factor)
    """

    inputs: ClassVar[dict[str, Any]] = {}
    outputs: ClassVar[dict[str, Any]] = {}
    side_inputs: ClassVar[dict[str, Any]] = {}
    optional_ports: ClassVar[frozenset[str]] = frozenset()
    options: ClassVar[type | None] = None
    input_policy: ClassVar[str] = "default"
    timestamp_offset: ClassVar[int | None] = 0
    queues_only: bool = False

    def open(self, cc: CalculatorContext) -> None:
        """Called once before the first ``process``; ``cc.options`` and ``cc.side_inputs`` are set."""

    def process(self, cc: CalculatorContext) -> None:
        """Called once per input set. A source (no inputs) is called until it calls ``cc.stop()``."""
        raise NotImplementedError(f"{type(self).__name__}.process")

    def close(self, cc: CalculatorContext) -> None:
        """Called once after the last ``process`` (inputs all closed, or the run failed)."""


def check_contract(cls: type) -> None:
    """Raise :class:`CalculatorContractError` if ``cls`` declares a malformed contract."""
    name = getattr(cls, "__name__", repr(cls))
    if not (isinstance(cls, type) and issubclass(cls, Calculator)):
        raise CalculatorContractError(f"{name} must be a subclass of Calculator")
    if cls.process is Calculator.process:
        raise CalculatorContractError(f"calculator {name} must define process(self, cc)")
    ports: set[str] = set()
    for kind in ("inputs", "outputs", "side_inputs"):
        decl = getattr(cls, kind)
        if not isinstance(decl, dict):
            raise CalculatorContractError(f"{name}.{kind} must be a dict port -> type, got {type(decl).__name__}")
        for port in decl:
            try:
                ok = canonical_port(port) == port
            except (ValueError, AttributeError):
                ok = False
            if not ok:
                raise CalculatorContractError(
                    f"{name}.{kind}: port names are UPPER_CASE tags like 'IMAGE', got {port!r}")
        if kind != "outputs":
            ports |= set(decl)
    extra = set(cls.optional_ports) - ports
    if extra:
        raise CalculatorContractError(f"{name}.optional_ports names {sorted(extra)}, not among inputs/side_inputs")
    if cls.options is not None and not (isinstance(cls.options, type) and dataclasses.is_dataclass(cls.options)):
        raise CalculatorContractError(f"{name}.options must be a dataclass type or None, got {cls.options!r}")
    if cls.input_policy not in POLICIES:
        raise CalculatorContractError(f"{name}.input_policy must be one of {POLICIES}, got {cls.input_policy!r}")
    off = cls.timestamp_offset
    if off is not None and (isinstance(off, bool) or not isinstance(off, int) or off < 0):
        raise CalculatorContractError(f"{name}.timestamp_offset must be None or an int >= 0, got {off!r}")
