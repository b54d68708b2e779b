"""Inference: run a .tflite model on a list of tensors (MediaPipe ``InferenceCalculator``).

On the CPU backend the input tensors are numpy arrays and so are the outputs. On webgpu a GPU
input tensor (from ``ImageToTensor``'s webgpu path) is bound to the model input with
``Interpreter.bind_input`` -- a GPU-side copy, nothing through the host -- and, with
``output_on_gpu``, the outputs stay on the GPU: each is copied on the GPU into a buffer the
packet owns (an interpreter's ``GpuTensor`` would go stale at its next invoke, while a
pipelined graph may still be decoding the previous frame). Bytes the interpreter moves are
added to the pipeline's transfer counters.

Usage::

    - calculator: Inference
      input_stream: "TENSORS:input_tensors"
      output_stream: "TENSORS:output_tensors"
      input_side_packet: "BACKEND:backend"            # optional graph-wide "cpu" | "webgpu" | "litert" | "auto"
      options: {model: face_detection_short_range}     # a .tflite path or a zoo name

The model may instead come as the ``MODEL`` side input (a path, a zoo name or the bytes).
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.environment import env
from gpulite.interpreter import Interpreter
from gpulite.pipeline.calculator import Calculator
from gpulite.pipeline.calculators._select import check_backend, requested_backend, select_backend
from gpulite.pipeline.calculators.refine_landmarks_from_heatmap import HeatmapWindows
from gpulite.pipeline.calculators.types import PipelineValueError
from gpulite.pipeline.registry import register_calculator

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class InferenceOptions:
    """``model``: a .tflite path or zoo name (or use the MODEL side input); ``num_threads``:
    None gives the litert backend the ``num_threads`` flag's count (``GPULITE_NUM_THREADS``) if
    set, else one XNNPACK thread per core up to 4 (:data:`LITERT_THREADS`; MediaPipe's desktop
    default is one thread, which its Python solutions cannot change) and
    the other backends their own default; ``output_on_gpu``: on webgpu, emit GPU tensors
    instead of reading the outputs back (default True); ``keep_on_gpu``: with ``output_on_gpu``
    False, the outputs (by position) that stay on the GPU all the same while the others come
    back, in one submit (pose: its segmentation, which the mask nodes take on the GPU);
    ``heatmap_windows``: ``{landmarks: i, heatmap: j, kernel_size: k}``: with ``output_on_gpu``
    False, output ``j`` (a (1, H, W, N) heatmap) does not come back: its ``k`` x ``k`` window
    around each of output ``i``'s N landmarks (model-input pixels) is summed on the GPU in the
    same submit, and a :class:`HeatmapWindows` takes its place for RefineLandmarksFromHeatmap
    (pose: 1.2 KiB instead of 624 KiB a frame). Where that cannot be exact (sizes not powers of
    two, the cpu backends) the heatmap comes as before."""

    model: str = ""
    backend: str = "auto"
    num_threads: int | None = None
    output_on_gpu: bool = True
    keep_on_gpu: tuple[int, ...] = ()
    heatmap_windows: dict[str, int] | None = None

    def __post_init__(self) -> None:
        check_backend(self.backend, "InferenceOptions")
        keep = self.keep_on_gpu
        if not isinstance(keep, (list, tuple)) or not all(isinstance(k, int) and not isinstance(k, bool) and k >= 0
                                                          for k in keep):
            raise ValueError(f"InferenceOptions: keep_on_gpu must be a list of output positions (ints >= 0), "
                             f"got {keep!r}")
        object.__setattr__(self, "keep_on_gpu", tuple(keep))
        hw = self.heatmap_windows
        if hw is not None and (set(hw) != {"landmarks", "heatmap", "kernel_size"} or not all(
                isinstance(v, int) and not isinstance(v, bool) and v >= 0 for v in hw.values())
                or hw["kernel_size"] < 1 or hw["landmarks"] == hw["heatmap"] or hw["heatmap"] in keep):
            raise ValueError(f"InferenceOptions: heatmap_windows must be {{landmarks: i, heatmap: j, kernel_size: k}} "
                             f"(two different output positions not in keep_on_gpu, k >= 1), got {hw!r}")


LITERT_THREADS = min(4, os.cpu_count() or 1)


def _is_gpu_tensor(t: Any) -> bool:
    return hasattr(t, "buffer") and hasattr(t, "data_sync")


class ModelRunner:
    """One interpreter and the input/output plumbing of :class:`Inference` (usable on its own).

    Parameters
    ----------
    model : str, Path or bytes
    backend : {"cpu", "webgpu"}
    output_on_gpu : bool
        webgpu only: return GPU tensors (copies the caller owns) instead of numpy arrays.
    """

    def __init__(self, model: str | Path | bytes, backend: str, *, num_threads: int | None = None,
                 output_on_gpu: bool = True, keep_on_gpu: tuple[int, ...] = (),
                 heatmap_windows: dict[str, int] | None = None) -> None:
        self.backend = backend
        self.output_on_gpu = backend == "webgpu" and output_on_gpu
        gpu_read = backend == "webgpu" and not self.output_on_gpu
        self._keep = frozenset(keep_on_gpu) if gpu_read else frozenset()
        kw: dict[str, Any] = {}
        self._gpu: Any = None
        if backend == "webgpu":
            from gpulite.backends.webgpu import pipeline as gpu
            self._gpu, self._gdev = gpu, gpu.shared_device()
            kw = {"device": self._gdev, "outputs_on_gpu": self.output_on_gpu or bool(self._keep)
                  or (gpu_read and heatmap_windows is not None)}
        src = {"model_content": bytes(model)} if isinstance(model, (bytes, bytearray)) else {"model_path": model}
        if num_threads is None and backend == "litert":  # the num_threads flag (GPULITE_NUM_THREADS), else per core
            num_threads = env().get("num_threads") or LITERT_THREADS
        self.it = Interpreter(**src, num_threads=num_threads, backend=backend, **kw)
        self.it.allocate_tensors()
        self._details()
        self.outputs = [d["index"] for d in self.it.get_output_details()]
        try:
            if self._keep and max(self._keep) >= len(self.outputs):
                raise PipelineValueError(f"Inference: keep_on_gpu {sorted(self._keep)} names an output past the "
                                         f"model's {len(self.outputs)}")
            self._windows = self._heatmap_windows(heatmap_windows) if gpu_read and heatmap_windows else None
        except PipelineValueError:  # the interpreter made here goes with the error
            self.it.close()
            raise
        self._stats = self._transfers()
        self._warned = False

    def _heatmap_windows(self, o: dict[str, int]) -> tuple[int, int, Any] | None:
        """(landmarks output, heatmap output, its HeatmapWindowsGpu), or None where the sums could
        not reproduce the host's cells exactly (sizes not powers of two) or the tensors do not fit."""
        details = self.it.get_output_details()
        lm, hm = o["landmarks"], o["heatmap"]
        if max(lm, hm) >= len(details):
            raise PipelineValueError(f"Inference: heatmap_windows names output {max(lm, hm)}, past the model's "
                                     f"{len(details)}")
        hshape = tuple(int(d) for d in details[hm]["shape"])
        lsize = int(np.prod(details[lm]["shape"]))
        ishape = self._shapes[0] if self._shapes else ()
        if len(hshape) != 4 or hshape[0] != 1 or len(ishape) != 4 or hshape[3] < 1 or lsize % hshape[3] \
                or lsize // hshape[3] < 2 or any(details[k]["dtype"] != np.float32 for k in (lm, hm)):
            raise PipelineValueError(f"Inference: heatmap_windows wants a (1, H, W, N) float32 heatmap (output {hm}: "
                                     f"{hshape}), N landmarks of x, y, ... (output {lm}: {lsize} values) and an "
                                     f"image input (1, H, W, C) (got {ishape})")
        _, height, width, n = hshape
        in_h, in_w = ishape[1], ishape[2]
        if any(v & (v - 1) for v in (height, width, in_h, in_w)):  # x * W / in rounds: the host path's cells
            log.info("Inference: heatmap %sx%s for input %sx%s: the heatmap comes back (sizes not powers of two)",
                     width, height, in_w, in_h)
            return None
        from gpulite.backends.webgpu.pipeline.heatmap import HeatmapWindowsGpu

        return lm, hm, HeatmapWindowsGpu(self._gdev, n, lsize // n, width, height, o["kernel_size"],
                                         (width / in_w, height / in_h))

    def _details(self) -> None:
        details = self.it.get_input_details()
        self.inputs = [d["index"] for d in details]
        self._shapes = [tuple(int(n) for n in d["shape"]) for d in details]
        self._dtypes = [d["dtype"] for d in details]

    def _transfers(self) -> tuple[int, int]:
        if self._gpu is None:
            return 0, 0
        s = self.it.transfer_stats()
        return s["bytes_uploaded"], s["bytes_read_back"]

    def _set(self, k: int, index: int, t: Any) -> None:
        shape = self._shapes[k]
        if _is_gpu_tensor(t):
            if self._gpu is not None:
                if tuple(t.shape) != shape:
                    raise PipelineValueError(f"Inference: GPU input {k} has shape {tuple(t.shape)}, the model "
                                             f"expects {shape}")
                self.it.bind_input(index, t.buffer, offset=t.offset)
                return
            if not self._warned:
                log.info("Inference on the cpu got GPU tensors: reading them back")
                self._warned = True
            t = t.data_sync()
        arr = np.asarray(t)
        if arr.shape != shape:  # MediaPipe's InferenceCalculator resizes to what comes, too
            self.it.resize_tensor_input(index, list(arr.shape))
            self.it.allocate_tensors()
            self._details()
            self._stats = self._transfers()  # a new plan: its counters start again (constants included)
        self.it.set_tensor(index, arr.astype(self._dtypes[k], copy=False))

    def run(self, tensors: list[Any]) -> list[Any]:
        if len(tensors) != len(self.inputs):
            raise PipelineValueError(f"Inference: the model takes {len(self.inputs)} input tensor(s), "
                                     f"got {len(tensors)}")
        for k, (index, t) in enumerate(zip(self.inputs, tensors, strict=True)):
            self._set(k, index, t)
        self.it.invoke()
        if self._keep or self._windows:  # kept outputs copied on the GPU, the others read back, one submit
            gpu = [self.it.get_output_gpu(i) for i in self.outputs]
            lm, hm, windows = self._windows or (None, None, None)
            keep = [k for k in range(len(gpu)) if k in self._keep]
            read = [k for k in range(len(gpu)) if k not in self._keep and k != hm]
            encode = None if windows is None else (lambda enc: [windows.encode(enc, gpu[lm], gpu[hm])])
            kept, arrays = self._gpu.copy_and_read(self._gdev, [gpu[k] for k in keep], [gpu[k] for k in read],
                                                   encode=encode)
            outs = [None] * len(gpu)
            for k, t in [*zip(keep, kept, strict=True), *zip(read, arrays, strict=False)]:
                outs[k] = t
            if windows is not None:
                outs[hm] = HeatmapWindows(arrays[-1], windows.kernel_size, (gpu[hm].shape[2], gpu[hm].shape[1]))
        elif self.output_on_gpu:
            outs = self._gpu.copy_tensors(self._gdev, [self.it.get_output_gpu(i) for i in self.outputs],
                                          "inference_outputs")
        else:
            outs = [self.it.get_tensor(i) for i in self.outputs]
        if self._gpu is not None:  # the interpreter's own traffic (inputs set on the host, outputs read back)
            up, down = self._transfers()
            self._gpu.record_transfer(up - self._stats[0], down - self._stats[1])
            self._stats = (up, down)
        return outs

    def close(self) -> None:
        self.it.close()


@register_calculator
class Inference(Calculator):
    """Tensors in, model outputs out; see the module docstring.

    Usage::

        - calculator: Inference
          input_stream: "TENSORS:input_tensors"
          output_stream: "TENSORS:output_tensors"
          options: {model: face_detection_short_range, backend: auto}
    """

    inputs = {"TENSORS": list}
    outputs = {"TENSORS": list}
    side_inputs = {"MODEL": (str, Path, bytes), "BACKEND": str}
    optional_ports = frozenset({"MODEL", "BACKEND"})
    options = InferenceOptions

    def open(self, cc) -> None:
        o: InferenceOptions = cc.options
        model = cc.side_inputs.get("MODEL") or o.model
        if not model:
            raise PipelineValueError(f"node {cc.node_name!r}: no model: set the 'model' option or the MODEL side input")
        backend = select_backend(requested_backend(cc, o.backend), cc.node_name, "Inference", models=True)
        self.runner = ModelRunner(model, backend, num_threads=o.num_threads, output_on_gpu=o.output_on_gpu,
                                  keep_on_gpu=o.keep_on_gpu, heatmap_windows=o.heatmap_windows)
        self.queues_only = self.runner.output_on_gpu  # invoke queues the GPU work, reads nothing back

    def process(self, cc) -> None:
        tensors = cc.inputs["TENSORS"]
        if tensors is not None:
            cc.output("TENSORS", self.runner.run(tensors))

    def close(self, cc) -> None:
        runner = getattr(self, "runner", None)
        if runner is not None:
            runner.close()
