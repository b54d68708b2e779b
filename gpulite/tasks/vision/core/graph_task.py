"""``GraphTask``: a vision task that runs one of gpulite's calculator graphs (``gpulite/pipeline/graphs``).

The landmarkers, the face detector and the segmenter are MediaPipe's Tasks graphs; gpulite's
solutions run the same graphs with the legacy models. A Tasks model differs in its file (a
``.task`` bundle member, with metadata) and, for the face mesh, in its input size and outputs, so a
task takes the solution's graph config, gives each ``Inference`` node its model's bytes (the
``MODEL`` side input, so nothing is looked up in the zoo) and sets the options its ``*Options``
name. In IMAGE mode the graph's tracking inputs are cut (every image is detected afresh); in VIDEO
and LIVE_STREAM it tracks as MediaPipe does, with the frames' timestamps as graph time.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from gpulite.pipeline.config import GraphConfig
from gpulite.solutions.base import GraphSession, node_config, resolve_backend
from gpulite.tasks.core.base_options import cpu_threads
from gpulite.tasks.vision.core.base_vision_task_api import BaseVisionTaskApi
from gpulite.tasks.vision.core.vision_task_running_mode import VisionTaskRunningMode


def use_models(cfg: GraphConfig, models: Mapping[str, bytes]) -> dict[str, bytes]:
    """Give each named ``Inference`` node of ``cfg`` its model bytes; returns the side packets to pass."""
    packets = {}
    for node, data in models.items():
        n = node_config(cfg, node)
        opts = dict(n.options or {})
        opts.pop("model", None)
        n.options = opts
        packet = f"{node}_model"
        n.side_inputs["MODEL"] = packet
        cfg.side_packet_names.append(packet)
        packets[packet] = data
    return packets


def check_unit(value: Any, name: str) -> float:
    """A confidence in [0, 1] (MediaPipe takes any float and misbehaves outside; gpulite says so)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating)):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {value!r}")
    return float(value)


def check_positive(value: Any, name: str) -> int:
    """A count >= 1 (MediaPipe: ``num_faces`` etc.)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value!r}")
    return int(value)


class GraphTask(BaseVisionTaskApi):
    """A :class:`BaseVisionTaskApi` over a :class:`~gpulite.solutions.base.GraphSession`.

    Subclasses build the config, then call :meth:`_start`; ``_run`` calls :meth:`_frame`.
    """

    def __init__(self, options: Any) -> None:
        super().__init__(options.running_mode, options.result_callback)
        self.backend, self.backend_reason = resolve_backend(options.base_options.resolve_backend())
        self._session: GraphSession | None = None
        self._t0: int | None = None

    @property
    def tracking(self) -> bool:
        return self.running_mode != VisionTaskRunningMode.IMAGE

    def _start(self, cfg: GraphConfig, models: Mapping[str, bytes], outputs: list[str],
               side_packets: Mapping[str, Any] | None = None) -> None:
        packets = {**use_models(cfg, models), **(side_packets or {})}
        self._session = GraphSession(cfg, backend=self.backend, outputs=outputs, side_packets=packets,
                                     num_threads=cpu_threads(self.backend))

    def _frame(self, rgb: np.ndarray, timestamp_ms: int | None) -> dict[str, Any]:
        """One frame through the graph: its outputs (None where nothing came)."""
        assert self._session is not None
        timestamp = None
        if timestamp_ms is not None:  # graph time in microseconds, as MediaPipe's (shifted to start at 0 if negative)
            self._t0 = min(int(timestamp_ms), 0) if self._t0 is None else self._t0
            timestamp = (int(timestamp_ms) - self._t0) * 1000
        return self._session.run({"image": rgb}, timestamp=timestamp)

    def _close(self) -> None:
        if self._session is not None:
            self._session.close()
