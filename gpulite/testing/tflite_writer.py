"""The model writer, :mod:`gpulite.model.writer` (moved into the runtime for the ``litert``
backend); kept importable here for the tests and users that import it by this name."""

from gpulite.model.writer import OP_OPTIONS, ModelBuilder, Quant, sparsify

__all__ = ["OP_OPTIONS", "ModelBuilder", "Quant", "sparsify"]
