"""``Solution``: the base class of gpulite's MediaPipe-style solutions (FaceDetector, FaceMesh, Hands...).

A solution wraps a calculator graph (``gpulite/pipeline/graphs/*.yaml``) behind MediaPipe's
``process(image) -> result`` call. Subclasses implement :meth:`Solution._process` (and, if
they keep state across frames, :meth:`Solution._reset` and :meth:`Solution._close`);
everything else is here:

- ``Solution(*, backend=None, static_image_mode=False)``: ``backend`` is ``"cpu"``,
  ``"webgpu"`` or None / ``"auto"`` (gpulite's automatic choice: the active backend of
  :func:`gpulite.get_backend`, so ``set_backend`` and ``GPULITE_BACKEND`` apply). The resolved
  name is :attr:`Solution.backend`, the reason :attr:`Solution.backend_reason`.
- ``process(image, timestamp_ms=None)``: ``image`` is an RGB ``numpy`` array, ``(H, W, 3)``
  ``uint8`` (what MediaPipe's Python solutions take). Anything else raises :class:`ImageError`
  (a ``ValueError``; a ``TypeError`` for non-arrays) that says what was expected and what came.
  An RGBA image must be converted first; a grayscale one too (the message says how).
- Timestamps: each frame goes into the graph at a timestamp in microseconds. By default frames
  are 33.333 ms apart from 33.333 ms on (``TICK_US``, what MediaPipe's Python solutions stamp
  whatever the real frame rate). ``timestamp_ms`` (the frame's time in milliseconds, e.g. a video's presentation
  time) replaces that, so time-based filters (pose landmark smoothing) see the real time
  between frames; it must increase from call to call (a :class:`TimestampOrderError`, a
  ``ValueError``, otherwise). Default ticks continue from the last timestamp; ``reset()``
  restarts the clock. :attr:`Solution.timestamp_us` is the last frame's timestamp.
- Arguments: an unknown or misspelt keyword raises a ``TypeError`` that lists what the
  solution accepts (and the nearest name); out-of-range values a ``ValueError`` naming the
  argument and its accepted values (:func:`check_confidence`, :func:`check_count`,
  :func:`check_choice`, :func:`check_flag`).
- Tracking: in video mode (``static_image_mode=False``) a solution may carry state from one
  ``process`` call to the next (the previous frame's landmarks give the next ROI).
  :meth:`Solution.reset` forgets it, e.g. between two unrelated videos. With
  ``static_image_mode=True`` every image is processed on its own.
- Timings: after each ``process``, :attr:`Solution.last_timings` maps stage names to
  milliseconds of that call, in pipeline order, ending with ``"total"`` (wall time of the
  whole ``process`` call). Stages are graph nodes (their busy time in this call) plus
  anything a subclass times with :meth:`Solution._timed`.
- Failed frames: when a calculator fails, that ``process`` call raises and the graph is
  closed; the next call runs a fresh one (tracking starts over, the clock goes on). On webgpu,
  device loss raises :class:`gpulite.DeviceLostError` (the fresh graph runs on a working device:
  what ``Interpreter.recover()`` does for an interpreter) and an image over the device's limits
  :class:`gpulite.DeviceLimitsError`, before anything is sent to the GPU.
- ``close()`` releases the graph and models; the solution is a context manager that closes on
  exit, and ``process`` after ``close`` raises :class:`SolutionClosedError`.

Usage::

    import numpy as np
    from PIL import Image
    from gpulite.solutions import FaceDetector

    rgb = np.asarray(Image.open("photo.jpg").convert("RGB"))
    with FaceDetector(model="short", backend="cpu") as fd:
        result = fd.process(rgb)
        print(fd.backend, fd.last_timings)       # {'to_tensor': 1.2, ..., 'total': 4.1} (ms)

Writing a solution::

    class Thing(Solution):
        def __init__(self, *, backend=None, static_image_mode=False):
            super().__init__(backend=backend, static_image_mode=static_image_mode)
            self._graph = GraphSession("thing", backend=self.backend, outputs=["things"],
                                       inputs=["image"])

        def _process(self, image):
            out = self._graph.run({"image": image}, timestamp=self.timestamp_us, timings=self.last_timings)
            return ThingResult(out["things"])

        def _reset(self):                       # forget tracking state
            self._graph.restart()

        def _close(self):
            self._graph.close()

:class:`GraphSession` runs a shipped (or given) graph one frame at a time: it feeds the input
streams at the frame's timestamp (microseconds), waits until every output stream is past it
(:meth:`gpulite.pipeline.Graph.wait_for`) and returns the payloads that came out (missing
outputs are None), adding each node's busy time to the timings.
"""

from __future__ import annotations

import contextlib
import dataclasses
import difflib
import functools
import inspect
import logging
import math
import numbers
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.errors import CalculatorError, DeviceLimitsError, DeviceLostError, GpuliteError, GraphConfigError
from gpulite.pipeline.config import GraphConfig, NodeConfig
from gpulite.pipeline.graph import Graph
from gpulite.solutions.auto import INFERENCE_THREADS

log = logging.getLogger(__name__)

BACKENDS = ("auto", "cpu", "webgpu", "litert")
TICK_US = 33333  # default time between frames, microseconds (MediaPipe's Python solutions' simulated clock)


class ImageError(GpuliteError, ValueError):
    """An image given to a solution is not an (H, W, 3) uint8 RGB array."""


class SolutionClosedError(GpuliteError, RuntimeError):
    """``process`` was called on a solution after ``close()``."""


class TimestampOrderError(GpuliteError, ValueError):
    """``process(image, timestamp_ms=...)`` got a timestamp not after the previous frame's."""


def _device_error(error: BaseException) -> DeviceLostError | DeviceLimitsError | None:
    """The device error (loss, limits) that ``error`` is or was caused by (e.g. a calculator's), else None."""
    seen: set[int] = set()
    e: BaseException | None = error
    while e is not None and id(e) not in seen:
        if isinstance(e, (DeviceLostError, DeviceLimitsError)):
            return e
        seen.add(id(e))
        e = e.__cause__
    return None


def check_confidence(value: Any, name: str) -> float:
    """``value`` as a float in [0, 1], or a ValueError naming ``name`` (TypeError for a non-number)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number in [0, 1], got {type(value).__name__} {value!r}")
    if not 0.0 <= float(value) <= 1.0:
        raise ValueError(f"{name} must be a number in [0, 1], got {value!r}")
    return float(value)


def check_count(value: Any, name: str) -> int:
    """``value`` as an int >= 1, or a ValueError naming ``name`` (TypeError for a non-integer)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int >= 1, got {type(value).__name__} {value!r}")
    if value < 1:
        raise ValueError(f"{name} must be an int >= 1, got {value!r}")
    return int(value)


def check_choice(value: Any, name: str, choices: Any) -> Any:
    """``value`` if it is one of ``choices`` (compared by ==, bools never taken for ints), else a ValueError."""
    if isinstance(value, bool) or value not in choices or type(value) not in {type(c) for c in choices}:
        raise ValueError(f"{name} must be one of {', '.join(repr(c) for c in choices)}, got {value!r}")
    return value


def check_flag(value: Any, name: str) -> bool:
    """``value`` as a bool: True/False (numpy bools and the ints 0 and 1 too), else a TypeError."""
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, numbers.Integral) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"{name} must be True or False, got {type(value).__name__} {value!r}")


def frame_timestamp_us(timestamp_ms: Any, previous_us: int | None, *, where: str) -> int:
    """The frame's timestamp in microseconds: ``timestamp_ms`` converted, or the next default tick.

    Raises
    ------
    TypeError
        ``timestamp_ms`` is not a number.
    ValueError
        It is negative or not finite; :class:`TimestampOrderError` when it is not after the
        previous frame's.
    """
    if timestamp_ms is None:
        return TICK_US if previous_us is None else previous_us + TICK_US
    if isinstance(timestamp_ms, bool) or not isinstance(timestamp_ms, numbers.Real):
        raise TypeError(f"{where}: timestamp_ms must be a number of milliseconds, got "
                        f"{type(timestamp_ms).__name__} {timestamp_ms!r}")
    if not math.isfinite(timestamp_ms) or timestamp_ms < 0:
        raise ValueError(f"{where}: timestamp_ms must be a finite number >= 0, got {timestamp_ms!r}")
    us = round(float(timestamp_ms) * 1000)
    if previous_us is not None and us <= previous_us:
        raise TimestampOrderError(f"{where}: timestamps must increase from frame to frame: got timestamp_ms="
                                  f"{timestamp_ms!r} after {previous_us / 1000:g} ms (call reset() to start a "
                                  "new video)")
    return us


def explain_bad_arguments(init: Any) -> Any:
    """Wrap a solution's ``__init__`` so wrong arguments raise a TypeError listing the accepted ones."""
    sig = inspect.signature(init)
    params = [p for p in sig.parameters.values() if p.name != "self"]
    names = [p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    open_kwargs = any(p.kind == p.VAR_KEYWORD for p in params)
    owner = init.__qualname__.split(".")[0]

    @functools.wraps(init)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> None:
        unknown = [] if open_kwargs else [k for k in kwargs if k not in names]
        problem = None
        if unknown:
            near = difflib.get_close_matches(unknown[0], names, n=1)
            problem = f"unexpected argument {unknown[0]!r}" + (f" (did you mean {near[0]!r}?)" if near else "")
        else:
            try:
                sig.bind(self, *args, **kwargs)
            except TypeError as e:
                problem = str(e)
        if problem is not None:
            raise TypeError(f"{owner}(): {problem}; accepted arguments: {', '.join(names)}")
        if "_arguments" not in self.__dict__:  # the most derived class's: what auto measures (solutions.auto)
            self._arguments = _keywords(sig, sig.bind(self, *args, **kwargs).arguments)
        init(self, *args, **kwargs)

    return wrapper


def _keywords(sig: inspect.Signature, bound: dict[str, Any]) -> dict[str, Any]:
    """Bound arguments as keywords (``**kwargs`` spread), to build the same solution again."""
    out: dict[str, Any] = {}
    for name, value in bound.items():
        kind = sig.parameters[name].kind
        if kind == inspect.Parameter.VAR_KEYWORD:
            out.update(value)
        elif name != "self" and kind != inspect.Parameter.VAR_POSITIONAL:
            out[name] = value
    return out


def check_image(image: Any, *, where: str = "process") -> np.ndarray:
    """Return ``image`` as a C-contiguous (H, W, 3) uint8 array, or raise a clear error.

    Parameters
    ----------
    image : numpy.ndarray
        RGB, (H, W, 3), uint8, at least 1x1.
    where : str
        The caller's name for the message.

    Raises
    ------
    TypeError
        ``image`` is not a numpy array (e.g. a PIL image or a path).
    ImageError
        Wrong dtype, number of dimensions or channels, or an empty image.

    Examples
    --------
    >>> check_image(np.zeros((480, 640, 3), np.uint8)).shape
    (480, 640, 3)
    """
    if not isinstance(image, np.ndarray):
        hint = (" (convert with np.asarray(pil_image.convert('RGB')))" if type(image).__module__.startswith("PIL")
                else " (load it first, e.g. np.asarray(PIL.Image.open(path).convert('RGB')))"
                if isinstance(image, (str, Path)) else "")
        raise TypeError(f"{where}: expected an RGB image as a numpy array (H, W, 3) uint8, got "
                        f"{type(image).__name__}{hint}")
    if image.ndim == 2 or (image.ndim == 3 and image.shape[2] == 1):
        raise ImageError(f"{where}: expected an RGB image (H, W, 3) uint8, got a single-channel image of shape "
                         f"{image.shape}; convert it, e.g. np.repeat(gray[..., None], 3, axis=2)")
    if image.ndim != 3:
        raise ImageError(f"{where}: expected an RGB image (H, W, 3) uint8, got an array of shape {image.shape} "
                         f"({image.ndim} dimensions); pass one frame at a time")
    if image.shape[2] != 3:
        extra = "; drop alpha with image[..., :3]" if image.shape[2] == 4 else ""
        raise ImageError(f"{where}: expected 3 channels (RGB), got {image.shape[2]} (shape {image.shape}){extra}")
    if image.shape[0] < 1 or image.shape[1] < 1:
        raise ImageError(f"{where}: the image is empty (shape {image.shape})")
    if image.dtype != np.uint8:
        hint = "; scale floats in [0, 1] with (img * 255).round().astype(np.uint8)" if image.dtype.kind == "f" else ""
        raise ImageError(f"{where}: expected dtype uint8, got {image.dtype} (shape {image.shape}){hint}")
    return np.ascontiguousarray(image)


@contextlib.contextmanager
def _frame_errors(where: str) -> Iterator[None]:
    """Re-raise a device loss or a frame over the device's limits as the solution's error for ``where``."""
    try:
        yield
    except GpuliteError as e:
        err = _device_error(e)
        if isinstance(err, DeviceLimitsError):
            raise DeviceLimitsError(f"{where}: {err}") from e
        if err is None:
            raise
        why = "; ".join(w for w in (err.reason, err.device) if w) or str(err)
        raise DeviceLostError(
            f"{where}: the GPU device was lost ({why}), so this frame has no result; the next process() "
            "call runs a fresh graph on a working device (tracking starts over)") from e


def _transfer_counters() -> Any:
    """``transfer_stats`` of the webgpu pipeline work (bytes up, bytes down, submits), or None without wgpu."""
    try:
        from gpulite.backends.webgpu.pipeline import transfer_stats
    except ImportError:
        return None
    return transfer_stats


def resolve_backend(backend: str | None, solution: Solution | None = None) -> tuple[str, str]:
    """``(name, why)``: ``"cpu"``, ``"webgpu"`` or ``"litert"`` (models on LiteRT's kernels, image work
    on the cpu) for a solution's ``backend=`` argument.

    None and ``"auto"``: ``set_backend``/``GPULITE_BACKEND`` when used, else (given the
    ``solution``) the fastest backend measured on this machine for its configuration
    (:mod:`gpulite.solutions.auto`), else gpulite's ranking (:func:`gpulite.get_backend`).
    ``"webgpu"`` with no usable adapter raises :class:`gpulite.BackendError` rather than run
    somewhere else silently.
    """
    from gpulite import runtime
    from gpulite.errors import BackendError

    if backend is not None and backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS} or None, got {backend!r}")
    if backend in (None, "auto"):
        try:
            if solution is not None and not runtime.chosen_explicitly():
                from gpulite.solutions import auto

                measured = auto.choose(type(solution), getattr(solution, "_arguments", {}))
                if measured is not None:
                    name, why, solution.inference_threads = measured
                    return name, why
            name, why = runtime.get_backend(), runtime.backend_choice()
        except GpuliteError as e:
            return "cpu", f"automatic choice failed ({e}); using the cpu"
        if name not in ("cpu", "webgpu", "litert"):
            return "cpu", f"the active backend {name!r} has no pipeline kernels; using the cpu"
        return name, f"automatic: {why}"
    if backend == "litert":
        from gpulite.pipeline.calculators._select import litert_status

        usable, why = litert_status()
        if not usable:
            raise BackendError(f"backend='litert' requested but it cannot run here: {why}")
        return "litert", "requested"
    if backend == "webgpu":
        from gpulite.pipeline.calculators._select import webgpu_status

        usable, _, why = webgpu_status()
        if not usable:
            raise BackendError(f"backend='webgpu' requested but WebGPU cannot run here: {why}")
        return "webgpu", "requested"
    return "cpu", "requested"


class Solution:
    """Base class: image checks, backend choice, tracking reset, timings, context manager.

    See the module docstring for the contract. Subclasses implement ``_process`` and may
    override ``_reset`` and ``_close``.

    Parameters
    ----------
    backend : {"cpu", "webgpu", "auto"} or None
        Where the graph runs; None and "auto" pick automatically.
    static_image_mode : bool
        True: every image on its own (no tracking). False: a video, frames in order.

    Attributes
    ----------
    backend : str
        The backend in use, "cpu" or "webgpu".
    backend_reason : str
        Why that one.
    inference_threads : int or None
        Threads of the graph's Inference nodes (``InferenceOptions.num_threads``): None for
        their default; 1 where ``auto`` measured one LiteRT thread faster than one per core.
    static_image_mode : bool
    last_timings : dict of str to float
        Milliseconds per stage of the last ``process`` call, ending with "total".
    last_transfers : dict of str to int
        On webgpu, what the last ``process`` call moved: ``bytes_uploaded``, ``bytes_read_back``
        and ``submits`` (queue submits). Counted process-wide, so exact when one solution runs
        at a time. Empty on the other backends.
    frames : int
        ``process`` calls since construction or the last ``reset``.
    timestamp_us : int or None
        The graph timestamp of the last frame, microseconds (None before the first).
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = explain_bad_arguments(cls.__dict__["__init__"])  # type: ignore[method-assign]

    def __init__(self, *, backend: str | None = None, static_image_mode: bool = False) -> None:
        self.inference_threads: int | None = INFERENCE_THREADS.get()
        self.backend, self.backend_reason = resolve_backend(backend, self)
        self.static_image_mode = bool(static_image_mode)
        self.last_timings: dict[str, float] = {}
        self.last_transfers: dict[str, int] = {}
        self.frames = 0
        self.timestamp_us: int | None = None
        self._moved: dict[str, int] = {}  # transfers summed over the frames after the first (get_plan)
        self._closed = False
        log.info("%s on %s (%s)", type(self).__name__, self.backend, self.backend_reason)

    # -- public API ------------------------------------------------------------------------
    def process(self, image: np.ndarray, timestamp_ms: float | None = None) -> Any:
        """Run the solution on one RGB image (H, W, 3) uint8; returns the subclass's result type.

        Parameters
        ----------
        image : numpy.ndarray
            RGB, (H, W, 3), uint8.
        timestamp_ms : float, optional
            The frame's time in milliseconds, increasing from call to call (video mode: what
            the landmark filters take as time). None: 33.333 ms after the previous frame.

        Raises
        ------
        TypeError, ImageError
            ``image`` is not an (H, W, 3) uint8 numpy array.
        TimestampOrderError
            ``timestamp_ms`` is not after the previous frame's.
        SolutionClosedError
            After ``close()``.
        DeviceLostError
            The GPU device was lost during this frame; the next call rebuilds the graph on a
            working device (gpulite's shared device is re-created), tracking starting over.
        DeviceLimitsError
            The image is too large for the GPU device (the message names each limit, the need
            and the device's value); later frames go on as after any failed frame.
        """
        where = f"{type(self).__name__}.process"
        if self._closed:
            raise SolutionClosedError(f"{where}() after close()")
        img = check_image(image, where=where)
        self.timestamp_us = frame_timestamp_us(timestamp_ms, self.timestamp_us, where=where)
        counters = self._begin_frame()
        t0 = time.perf_counter()
        with _frame_errors(where):
            result = self._process(img)
        self._end_frame(counters, time.perf_counter() - t0)
        return result

    def process_video(self, frames: Iterable[np.ndarray], timestamps_ms: Iterable[float] | None = None,
                      ) -> Iterator[Any]:
        """Yield the result of each of ``frames`` in order, overlapping frame N+1 with frame N.

        The results are those of ``process(frame, timestamp_ms)`` called frame by frame (same
        timestamps, same tracking), but frame N+1 goes into the graph before frame N's results
        are collected: on webgpu its upload and GPU work (``ImageToTensor``, ``Inference``) are
        queued before frame N's outputs are read back and decoded, so the GPU computes while
        the host decodes (double buffering; at most two frames in flight). A tracked region
        still waits for the previous frame's landmarks, as in MediaPipe, so what overlaps there
        is what does not depend on them. Every frame gets exactly one result (no frame is
        dropped: MediaPipe's VIDEO mode, not its flow-limited live stream).

        ``last_timings`` and ``last_transfers`` after each result cover the work done since
        the previous result (which includes the next frame's queued GPU work). A failed frame
        raises from the iteration, and the frame fed after it is lost with it; the next call
        starts a fresh graph, as after a failed ``process``.

        Parameters
        ----------
        frames : iterable of numpy.ndarray
            RGB (H, W, 3) uint8 frames, read lazily (one ahead of the result yielded).
        timestamps_ms : iterable of float, optional
            One increasing time per frame (as ``process``'s ``timestamp_ms``); None: 33.333 ms apart.
        """
        where = f"{type(self).__name__}.process_video"
        session: GraphSession | None = getattr(self, "_session", None)
        times = None if timestamps_ms is None else iter(timestamps_ms)
        pending: deque[tuple[np.ndarray, int]] = deque()
        busy = 0.0
        counters = self._begin_frame()
        for frame in frames:
            if self._closed:
                raise SolutionClosedError(f"{where}() after close()")
            img = check_image(frame, where=where)
            t_ms = None
            if times is not None:
                t_ms = next(times, None)
                if t_ms is None:
                    raise ValueError(f"{where}: timestamps_ms ran out before the frames")
            if session is None:  # a solution without one graph session: frame by frame
                yield self.process(img, t_ms)
                continue
            ts = frame_timestamp_us(t_ms, self.timestamp_us, where=where)
            t0 = time.perf_counter()
            with _frame_errors(where):
                session.feed({"image": self._graph_frame(img)}, timestamp=ts)
            busy += time.perf_counter() - t0
            self.timestamp_us = ts
            pending.append((img, ts))
            if len(pending) > 1:
                result, busy = self._collect_frame(session, *pending.popleft(), where, busy, counters)
                yield result
                counters = self._begin_frame()
        while pending:
            result, busy = self._collect_frame(session, *pending.popleft(), where, busy, counters)
            yield result
            counters = self._begin_frame()

    def _collect_frame(self, session: GraphSession, image: np.ndarray, ts: int, where: str, busy: float,
                       counters: dict[str, int]) -> tuple[Any, float]:
        """process_video: collect the frame fed at ``ts``; (its result, the busy time carried on: 0)."""
        t0 = time.perf_counter()
        with _frame_errors(where):
            out = session.collect(ts, timings=self.last_timings)
            result = self._result(image, out)
        self._end_frame(counters, busy + time.perf_counter() - t0)
        return result, 0.0

    def _begin_frame(self) -> dict[str, int]:
        """Start a frame's bookkeeping: a fresh ``last_timings``; returns the transfer counters now
        (empty off webgpu)."""
        self.last_timings = {}
        counters = _transfer_counters() if self.backend == "webgpu" else None
        return counters() if counters else {}

    def _end_frame(self, before: dict[str, int], seconds: float) -> None:
        self.last_timings["total"] = seconds * 1e3
        if before:
            counters = _transfer_counters()
            self.last_transfers = {k: v - before[k] for k, v in counters().items()}
            if self.frames:  # the first frame (pipelines, constants) is left out of the means
                for k, v in self.last_transfers.items():
                    self._moved[k] = self._moved.get(k, 0) + v
                self._moved["frames"] = self._moved.get("frames", 0) + 1
        self.frames += 1

    def get_plan(self) -> dict[str, Any]:
        """What the solution runs and what a frame moves between host and GPU.

        Returns a dict: ``backend``, ``backend_reason``, ``nodes`` (graph node name ->
        calculator), and on webgpu ``per_frame``: the mean ``bytes_uploaded``,
        ``bytes_read_back`` and ``submits`` per frame over the frames since construction or
        ``reset()``, the first left out (``frames``: how many; None before the second frame),
        and ``last_frame`` (:attr:`last_transfers`). Counted process-wide, as ``last_transfers``.
        """
        session: GraphSession | None = getattr(self, "_session", None)
        nodes = {name: s.calculator for name, s in session.graph.stats().items()} if session is not None else {}
        plan: dict[str, Any] = {"backend": self.backend, "backend_reason": self.backend_reason, "nodes": nodes}
        if self.backend == "webgpu":
            n = self._moved.get("frames", 0)
            plan["per_frame"] = None if not n else {
                **{k: v / n for k, v in self._moved.items() if k != "frames"}, "frames": n}
            plan["last_frame"] = dict(self.last_transfers)
        return plan

    def reset(self) -> None:
        """Forget tracking state: the next frame starts from scratch (detector first), and the clock from 0."""
        if not self._closed:
            self._reset()
        self.frames = 0
        self._moved = {}
        self.timestamp_us = None

    def close(self) -> None:
        """Release graphs and models. Safe to call twice."""
        if not self._closed:
            self._closed = True
            self._close()

    @property
    def closed(self) -> bool:
        return self._closed

    def __enter__(self) -> Solution:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        self.close()

    # -- for subclasses ----------------------------------------------------------------------
    def _process(self, image: np.ndarray) -> Any:
        """One frame (``self.timestamp_us`` is its timestamp): by default the ``_session``
        graph's outputs for it made into the result by :meth:`_result`."""
        out = self._session.run({"image": self._graph_frame(image)}, timestamp=self.timestamp_us,
                                timings=self.last_timings)
        return self._result(image, out)

    def _graph_frame(self, image: np.ndarray) -> np.ndarray:
        """The frame as the graph gets it: on webgpu a :class:`~gpulite.pipeline.gpu_image.SharedFrame`
        view, so every node that warps it (detector, each landmark region) shares one upload."""
        if self.backend != "webgpu":
            return image
        from gpulite.pipeline.gpu_image import SharedFrame

        return image.view(SharedFrame)

    def _result(self, image: np.ndarray, out: dict[str, Any]) -> Any:
        """The result type built from one frame's graph outputs (``GraphSession.run``)."""
        raise NotImplementedError

    def _reset(self) -> None:
        """Forget state carried between frames (default: nothing)."""

    def _close(self) -> None:
        """Release resources (default: nothing)."""

    @contextlib.contextmanager
    def _timed(self, stage: str) -> Iterator[None]:
        """``with self._timed("decode"): ...`` adds that block's milliseconds to ``last_timings[stage]``."""
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.last_timings[stage] = self.last_timings.get(stage, 0.0) + (time.perf_counter() - t0) * 1e3


def node_config(cfg: GraphConfig, name: str) -> NodeConfig:
    """The node called ``name`` in ``cfg`` (its ``name:``, or its calculator when it has none)."""
    found = [n for n in cfg.nodes if (n.name or (n.calculator if isinstance(n.calculator, str) else "")) == name]
    if len(found) != 1:
        names = [n.name or n.calculator for n in cfg.nodes]
        raise GraphConfigError(f"expected one node {name!r} in the graph, found {len(found)}; nodes: {names}")
    return found[0]


def set_options(cfg: GraphConfig, settings: Mapping[str, Any]) -> GraphConfig:
    """Override node options in place, MediaPipe ``calculator_params`` style; returns ``cfg``.

    Examples
    --------
    >>> cfg = load_config("face_mesh")
    >>> set_options(cfg, {"detector_decode.min_score_thresh": 0.7, "landmark_inference.model": "face_landmark"})
    """
    for key, value in settings.items():
        node, _, option = key.partition(".")
        if not option:
            raise GraphConfigError(f"set_options: expected 'node.option', got {key!r}")
        n = node_config(cfg, node)
        opts = dict(n.options or {})
        opts[option] = value
        n.options = opts
    return cfg


def disconnect(cfg: GraphConfig, node: str, port: str) -> GraphConfig:
    """Remove input ``port`` of ``node`` (an optional port) in place; returns ``cfg``."""
    n = node_config(cfg, node)
    if port not in n.inputs:
        raise GraphConfigError(f"disconnect: node {node!r} has no connected input {port!r}; inputs: {sorted(n.inputs)}")
    del n.inputs[port]
    n.back_edges.discard(port)
    return cfg


def check_models(cfg: GraphConfig) -> None:
    """Resolve every ``Inference`` node's model now, so a missing one fails at construction, not at the first frame.

    Raises
    ------
    ModelError
        Naming the node and the model, with the zoo's reason.
    """
    from gpulite import zoo
    from gpulite.errors import ModelError

    for n in cfg.nodes:
        model = n.options.get("model") if n.calculator == "Inference" and isinstance(n.options, Mapping) else None
        if isinstance(model, (str, Path)):
            try:
                zoo.resolve(model)
            except ModelError as e:
                raise ModelError(f"graph node {n.name or n.calculator!r} needs the model {str(model)!r}, which cannot "
                                 f"be loaded: {e}") from None


def _inference_threads(node: NodeConfig, threads: int) -> NodeConfig:
    """``node`` with ``num_threads=threads`` if it is an Inference node that leaves it unset."""
    name = node.calculator if isinstance(node.calculator, str) else getattr(node.calculator, "__name__", "")
    if name != "Inference":
        return node
    opts = node.options
    if opts is None or isinstance(opts, Mapping):
        if (opts or {}).get("num_threads") is not None:
            return node
        return dataclasses.replace(node, options={**(opts or {}), "num_threads": threads})
    if getattr(opts, "num_threads", None) is not None:
        return node
    return dataclasses.replace(node, options=dataclasses.replace(opts, num_threads=threads))


class GraphSession:
    """Runs a calculator graph one frame at a time and hands back what each frame produced.

    Parameters
    ----------
    graph : str, Path or GraphConfig
        A shipped graph name (``gpulite/pipeline/graphs/<name>.yaml``), a YAML path, or a config.
    backend : str
        The graph's ``backend`` side packet ("cpu" or "webgpu").
    outputs : list of str
        Output streams to collect (default: all the graph's output streams).
    side_packets : dict, optional
        More side packets.
    num_threads : int, optional
        ``num_threads`` of every Inference node that does not set its own.
    timeout : float
        Seconds to wait for one frame before :class:`gpulite.errors.GraphTimeoutError`.

    Examples
    --------
    >>> s = GraphSession("face_detection", backend="cpu")
    >>> out = s.run({"image": rgb})          # {"detections": [Detection, ...]}
    >>> s.close()
    """

    def __init__(self, graph: str | Path | GraphConfig, *, backend: str, outputs: list[str] | None = None,
                 side_packets: Mapping[str, Any] | None = None, timeout: float = 120.0,
                 num_threads: int | None = None) -> None:
        from gpulite.pipeline.graphs import load_config

        cfg = graph if isinstance(graph, GraphConfig) else load_config(graph)
        if num_threads is not None:
            cfg = dataclasses.replace(cfg, nodes=[_inference_threads(n, num_threads) for n in cfg.nodes])
        check_models(cfg)
        if cfg.num_threads is None:
            # One frame at a time: the thread calling run() runs the nodes (no hand-offs between threads)
            cfg = dataclasses.replace(cfg, num_threads=0)
        self.graph = Graph(cfg, side_packets={"backend": backend, **(side_packets or {})})
        self.outputs = list(outputs) if outputs is not None else self.graph.output_streams
        self.timeout = timeout
        self._frames: dict[int, dict[str, Any]] = {}  # outputs by frame timestamp (frames may overlap)
        for name in self.outputs:
            self.graph.observe(name, lambda p, name=name: self._frames.setdefault(p.timestamp, {}).__setitem__(
                name, p.payload))
        self._last: int | None = None
        self._started = False
        self._busy: dict[str, float] = {}

    def run(self, inputs: Mapping[str, Any], *, timestamp: int | None = None,
            timings: dict[str, float] | None = None) -> dict[str, Any]:
        """Feed one frame (every input stream at the same timestamp); return the outputs.

        ``timestamp`` (microseconds) must be after the previous frame's; None: ``TICK_US``
        after it (``TICK_US`` for the first frame of a run, as MediaPipe's Python solutions).
        Outputs the graph emitted nothing on for this frame are None. With ``timings``, each
        node's busy milliseconds for this frame are added under its name (nodes that did no
        work are left out). ``run`` is :meth:`feed` then :meth:`collect`.
        """
        return self.collect(self.feed(inputs, timestamp=timestamp), timings=timings)

    def feed(self, inputs: Mapping[str, Any], *, timestamp: int | None = None) -> int:
        """Put one frame into the graph without waiting for it; returns its timestamp (microseconds).

        Frames fed before the previous ones were collected overlap: in an inline run (the
        default) nothing runs until :meth:`collect`, which then runs the nodes of every frame
        fed so far as their inputs allow, GPU submits first (``Calculator.queues_only``), so
        frame N+1's GPU work is queued before frame N's results are read back.
        """
        if not self._started:
            self.graph.start()
            self._started = True
            self._last = None
            self._frames.clear()
            self._busy = self.graph.busy_seconds()
        if timestamp is None:
            ts = TICK_US if self._last is None else self._last + TICK_US
        elif self._last is not None and timestamp <= self._last:
            raise TimestampOrderError(f"GraphSession.run: timestamp {timestamp} us is not after {self._last} us")
        else:
            ts = int(timestamp)
        self._last = ts
        try:
            for name, payload in inputs.items():
                self.graph.add_packet(name, payload, timestamp=ts)
        except CalculatorError:  # the run stopped at it (drained): end it, the next run starts a fresh graph
            self._end_failed_run()
            raise
        return ts

    def collect(self, timestamp: int, *, timings: dict[str, float] | None = None) -> dict[str, Any]:
        """Wait for the frame fed at ``timestamp`` and return its outputs (see :meth:`run`).

        Frames are collected in the order they were fed. Node times (``timings``) are those
        spent since the previous ``collect``, which with overlapping frames includes work on
        the frames fed after this one.
        """
        try:
            self.graph.wait_for(self.outputs, timestamp, timeout=self.timeout)
        except CalculatorError:  # the run stopped at it (drained): end it, the next run starts a fresh graph
            self._end_failed_run()
            raise
        for t in [t for t in self._frames if t < timestamp]:  # frames fed but never collected
            del self._frames[t]
        got = self._frames.pop(timestamp, {})
        out = {name: got.get(name) for name in self.outputs}
        if timings is not None:
            for name, busy in self.graph.busy_seconds().items():
                dt = busy - self._busy.get(name, 0.0)
                self._busy[name] = busy
                if dt > 0:
                    timings[name] = timings.get(name, 0.0) + dt * 1e3
        return out

    def _end_failed_run(self) -> None:
        """Close a run a calculator error stopped; its calculators (and their GPU objects) go with it,
        so a lost device or a refused frame does not break the frames after it."""
        self._started = False
        with contextlib.suppress(CalculatorError):  # the run's error again, already raised to the caller
            self.graph.close()

    def restart(self) -> None:
        """End the current run and start afresh at the next ``run`` (all calculator state is dropped)."""
        self.close()

    def close(self) -> None:
        """Close the graph (a later ``run`` starts a new one)."""
        if self._started:
            self._started = False
            self.graph.close()
