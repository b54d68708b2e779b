"""Calculator registry: class name -> class. Modules under ``gpulite.pipeline.calculators`` are
discovered on the first lookup of an unknown name, never listed by hand."""

from __future__ import annotations

import difflib
import importlib
import pkgutil
from typing import TypeVar

from gpulite.errors import CalculatorContractError, GraphConfigError
from gpulite.pipeline.calculator import Calculator, check_contract

C = TypeVar("C", bound=type[Calculator])
_REGISTRY: dict[str, type[Calculator]] = {}
_discovered = False
_PACKAGE = "gpulite.pipeline.calculators"


def register_calculator(cls: C) -> C:
    """Class decorator: check ``cls``'s contract and register it under ``cls.__name__``.

    Raises
    ------
    CalculatorContractError
        The contract is malformed, or another class already has that name.
    """
    check_contract(cls)
    name = cls.__name__
    old = _REGISTRY.get(name)
    if old is not None and old is not cls:
        raise CalculatorContractError(
            f"calculator name {name!r} is already registered by {old.__module__}.{old.__qualname__}; "
            f"cannot register {cls.__module__}.{cls.__qualname__}")
    _REGISTRY[name] = cls
    return cls


def unregister_calculator(name: str) -> None:
    """Remove ``name`` from the registry (tests)."""
    _REGISTRY.pop(name, None)


def _discover() -> None:
    global _discovered
    if _discovered:
        return
    try:
        pkg = importlib.import_module(_PACKAGE)
    except ModuleNotFoundError as e:
        if e.name != _PACKAGE:
            raise
        _discovered = True
        return
    for m in pkgutil.iter_modules(pkg.__path__):
        importlib.import_module(f"{_PACKAGE}.{m.name}")   # an import error propagates; the next lookup retries
    _discovered = True


def registered_calculators() -> dict[str, type[Calculator]]:
    """A copy of the registry, after discovery."""
    _discover()
    return dict(_REGISTRY)


def get_calculator(name: str) -> type[Calculator]:
    """The class registered as ``name``; raises :class:`GraphConfigError` listing close names."""
    if name not in _REGISTRY:
        _discover()
    try:
        return _REGISTRY[name]
    except KeyError:
        close = difflib.get_close_matches(name, list(_REGISTRY), n=3)
        hint = f"; did you mean {close}?" if close else f"; registered: {sorted(_REGISTRY)}"
        raise GraphConfigError(f"unknown calculator {name!r}{hint}") from None
