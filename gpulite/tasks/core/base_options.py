"""``BaseOptions``: the model asset and where it runs (MediaPipe Tasks' ``core.base_options``).

``delegate`` maps MediaPipe's choice onto gpulite's backends: ``GPU`` runs on ``webgpu`` (any GPU
with a Vulkan, Metal or D3D12 driver), ``CPU`` (and ``DEFAULT`` or None, MediaPipe's default) on
``litert`` (LiteRT's XNNPACK kernels, MediaPipe's own CPU path) where ai-edge-litert is installed,
else on ``cpu`` (gpulite's numpy kernels). ``backend=`` (gpulite's, not MediaPipe's) names a
backend directly: "cpu", "litert", "webgpu" or "auto" (gpulite's automatic choice).

On ``litert`` a task's models run with one XNNPACK thread per core, up to 4, as gpulite's
solutions (MediaPipe's own uses one thread on desktops); the ``num_threads`` flag
(``GPULITE_NUM_THREADS``) sets another count. On a machine whose cores are all busy, one thread
is faster (docs/tasks.md gives the figures).
"""

from __future__ import annotations

import dataclasses
import enum

BACKENDS = ("cpu", "litert", "webgpu", "auto")


@dataclasses.dataclass
class BaseOptions:
    """The model asset of a task, and where it runs.

    Parameters
    ----------
    model_asset_path : str, optional
        A ``.task`` bundle or ``.tflite`` file, or a zoo name (``gpulite models list``).
    model_asset_buffer : bytes, optional
        The asset's bytes; used instead of the path when given (MediaPipe's precedence).
    delegate : BaseOptions.Delegate, optional
        ``CPU`` or ``GPU`` (None and ``DEFAULT``: the CPU, as in MediaPipe).
    backend : str, optional
        gpulite's backend by name ("cpu", "litert", "webgpu", "auto"); overrides ``delegate``.

    Examples
    --------
    >>> BaseOptions(model_asset_path="face_landmarker.task", delegate=BaseOptions.Delegate.GPU).resolve_backend()
    'webgpu'
    """

    class Delegate(enum.IntEnum):
        DEFAULT = 0
        CPU = 1
        GPU = 2

    model_asset_path: str | None = None
    model_asset_buffer: bytes | None = None
    delegate: Delegate | None = None
    backend: str | None = None

    def resolve_backend(self) -> str:
        """The gpulite backend these options ask for: "webgpu", "litert", "cpu" or "auto".

        Raises
        ------
        ValueError
            ``backend`` is not a known name, or ``delegate`` is not a ``Delegate``.
        """
        if self.backend is not None:
            if self.backend not in BACKENDS:
                raise ValueError(f"BaseOptions.backend must be one of {BACKENDS} or None, got {self.backend!r}")
            return self.backend
        if self.delegate is not None and self.delegate not in tuple(BaseOptions.Delegate):
            raise ValueError(f"BaseOptions.delegate must be a BaseOptions.Delegate (CPU or GPU) or None, got "
                             f"{self.delegate!r}")
        if self.delegate == BaseOptions.Delegate.GPU:
            return "webgpu"
        from gpulite.pipeline.calculators._select import litert_status

        return "litert" if litert_status()[0] else "cpu"


def cpu_threads(backend: str) -> int | None:
    """XNNPACK threads of a task's models on ``backend``: None off ``litert``; else the
    ``num_threads`` flag (``GPULITE_NUM_THREADS``) if set, else one per core, up to 4."""
    if backend != "litert":
        return None
    from gpulite.environment import env
    from gpulite.pipeline.calculators.inference import LITERT_THREADS

    return env().get("num_threads") or LITERT_THREADS
