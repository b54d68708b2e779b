"""Graph configs shipped with gpulite, and the runner behind ``gpulite graph run``.

    >>> from gpulite.pipeline.graphs import load_graph
    >>> g = load_graph("face_detection", backend="cpu")      # gpulite/pipeline/graphs/face_detection.yaml

:func:`run_media` feeds a video file, an image, a folder of images or a camera through a graph
whose first input stream takes RGB frames, optionally writes the frames with every
detection/landmark/mask output drawn on them, and returns a :class:`RunSummary`.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.errors import GraphConfigError, GraphTimeoutError
from gpulite.pipeline.config import GraphConfig, NodeConfig, parse_yaml
from gpulite.pipeline.graph import Graph

GRAPHS_DIR = Path(__file__).parent
FIRST_FRAME_WAIT_S = 120  # how long run_media waits for the first frame alone before timing all frames together
log = logging.getLogger(__name__)
# Output port tags the overlay can draw, and the overlay port each one feeds.
_OVERLAY_PORTS = {"DETECTIONS": "DETECTIONS", "NORM_RECTS": "NORM_RECTS", "NORM_RECT": "NORM_RECT",
                  "NORM_LANDMARKS": "LANDMARKS", "LANDMARKS": "LANDMARKS", "MASK": "MASK"}


def available_graphs() -> list[str]:
    """Names of the shipped graph configs."""
    return sorted(p.stem for p in GRAPHS_DIR.glob("*.yaml"))


def config_path(name: str | Path) -> Path:
    """A shipped graph's YAML file, or ``name`` itself when it is an existing file."""
    p = Path(name)
    if p.suffix in (".yaml", ".yml") and p.is_file():
        return p
    shipped = GRAPHS_DIR / f"{name}.yaml"
    if shipped.is_file():
        return shipped
    raise GraphConfigError(f"no graph {str(name)!r}: not a YAML file, and not one of the shipped graphs "
                           f"{available_graphs()}")


def load_config(name: str | Path) -> GraphConfig:
    return parse_yaml(config_path(name).read_text(encoding="utf-8"))


def load_graph(name: str | Path, *, backend: str = "auto", side_packets: dict[str, Any] | None = None) -> Graph:
    """A shipped graph (or a YAML path) with its ``backend`` side packet set."""
    return Graph(load_config(name), side_packets={"backend": backend, **(side_packets or {})})


def add_overlay(cfg: GraphConfig, image_stream: str, output_stream: str = "output_image") -> GraphConfig:
    """Append an ``AnnotationOverlay`` drawing every drawable graph output onto ``image_stream``."""
    producers = {s: (port, n) for n in cfg.nodes for port, s in n.outputs.items()}
    inputs = {"IMAGE": image_stream}
    for s in cfg.output_streams:
        port = producers.get(s, (None, None))[0]
        tag = port.partition(":")[0] if port else None
        if tag in _OVERLAY_PORTS and _OVERLAY_PORTS[tag] not in inputs:
            inputs[_OVERLAY_PORTS[tag]] = s
    cfg.nodes.append(NodeConfig("AnnotationOverlay", name="overlay", inputs=inputs, outputs={"IMAGE": output_stream}))
    cfg.output_streams.append(output_stream)
    return cfg


def unrelated_images(cfg: GraphConfig) -> dict[str, Any]:
    """Make ``cfg`` (in place) treat its frames as unrelated images; returns the side packets that go with it.

    What the solutions' ``static_image_mode`` does, for any graph: every ``PreviousLoopback``
    node (the tracking back edges) is removed along with the inputs it fed, so each frame goes
    to the detector afresh, and the side packets named ``smooth_*`` (pose's landmark and mask
    smoothing over time) are set False.
    """
    loops = [n for n in cfg.nodes if getattr(n.calculator, "__name__", n.calculator) == "PreviousLoopback"]
    fed = {s for n in loops for s in n.outputs.values()}
    cfg.nodes = [n for n in cfg.nodes if n not in loops]
    for n in cfg.nodes:
        for port in [p for p, s in n.inputs.items() if s in fed]:
            del n.inputs[port]
            n.back_edges.discard(port)
    return {name: False for name in cfg.side_packet_names if name.startswith("smooth_")}


def open_input(spec: str, max_frames: int = -1, on_unreadable: Callable[[Path, Exception], None] | None = None
               ) -> tuple[Iterator[tuple[int, np.ndarray]], float, int]:
    """(frames as (timestamp, RGB array), frames per second, frame count or 0) for an input spec.

    ``spec``: a video file, an image file, a folder of images, or ``camera:N``. With
    ``on_unreadable``, a folder's images that cannot be decoded are passed to it and skipped;
    without, the first one raises :class:`~gpulite.pipeline.calculators.sources.ImageReadError`.
    """
    from gpulite.pipeline.calculators import sources

    if spec.startswith("camera:"):
        return sources.CameraReader(int(spec.partition(":")[2] or 0), max_frames=max_frames), 30.0, max(max_frames, 0)
    p = Path(spec)
    if p.is_dir():
        files = sources.image_files(p)
        files = files if max_frames < 0 else files[:max_frames]

        def images() -> Iterator[tuple[int, np.ndarray]]:
            for i, f in enumerate(files):
                try:
                    image = sources.load_image(f)
                except sources.ImageReadError as e:
                    if on_unreadable is None:
                        raise
                    on_unreadable(f, e)
                    continue
                yield i * sources.FRAME_INTERVAL_US, image

        return images(), 30.0, len(files)
    if p.suffix.lower() in sources.IMAGE_SUFFIXES:
        return iter([(0, sources.load_image(p))]), 30.0, 1
    info = sources.video_info(p)
    count = info.frames if max_frames < 0 else min(info.frames or max_frames, max_frames)
    return iter(sources.VideoReader(p, max_frames)), info.fps or 30.0, count


@dataclass
class RunSummary:
    """What one ``run_media`` did.

    The first frame pays one-time work (model compilation, uploads): ``first_frame_seconds``
    holds it, and ``seconds``, :attr:`fps` and ``per_node_ms`` count only the frames after it
    (with a single frame they are 0 / empty, and ``first_node_ms`` is all there is).
    """

    frames_in: int = 0
    frames_out: int = 0
    seconds: float = 0.0
    startup_seconds: float = 0.0
    first_frame_seconds: float = 0.0
    drops: int = 0
    bytes_per_frame: float | None = None  # up + down
    transfers_per_frame: dict[str, float] = field(default_factory=dict)  # bytes_uploaded, bytes_read_back, submits
    per_node_ms: dict[str, float] = field(default_factory=dict)
    first_node_ms: dict[str, float] = field(default_factory=dict)

    @property
    def fps(self) -> float:
        return (self.frames_out - 1) / self.seconds if self.seconds > 0 and self.frames_out > 1 else 0.0

    def lines(self) -> list[str]:
        out = [f"frames     {self.frames_in} in, {self.frames_out} out, {self.drops} dropped"]
        first = f"start-up {self.startup_seconds:.2f} s, first frame {self.first_frame_seconds * 1e3:.0f} ms"
        if self.frames_out > 1:
            out.append(f"time       {self.seconds:.2f} s, {self.fps:.1f} frames/s after the first frame ({first})")
        else:
            out.append(f"time       {first}; per-frame figures need two frames or more")
        if self.bytes_per_frame is not None:
            t = self.transfers_per_frame
            out.append(f"transfers  {self.bytes_per_frame / 1024:.1f} KiB host<->GPU per frame after the first "
                       f"({t['bytes_uploaded'] / 1024:.1f} KiB up, {t['bytes_read_back'] / 1024:.1f} KiB down, "
                       f"{t['submits']:.1f} submits)")
        nodes, label = (self.per_node_ms, "per node  ") if self.per_node_ms else (self.first_node_ms, "1st frame ")
        if nodes:
            out.append(label + " " + ", ".join(f"{k} {v:.2f} ms" for k, v in nodes.items()))
        return out


class Progress:
    """A one-line progress bar on a stream (redrawn in place on a terminal, every 10% otherwise)."""

    def __init__(self, total: int, stream: Any = None, width: int = 30) -> None:
        self.total, self.stream, self.width = total, stream or sys.stderr, width
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self.t0 = time.perf_counter()
        self._last = 0.0
        self._decile = -1
        self._shown = -1

    def start(self) -> None:
        """Restart the clock (frames/s counts from here)."""
        self.t0 = time.perf_counter()

    def update(self, done: int, *, final: bool = False) -> None:
        now = time.perf_counter()
        fps = done / (now - self.t0) if now > self.t0 else 0.0
        if self.total:
            frac = min(done / self.total, 1.0)
            bar = "#" * int(frac * self.width) + "." * (self.width - int(frac * self.width))
            text = f"[{bar}] {done}/{self.total} frames {fps:6.1f} fps"
        else:
            frac, text = 0.0, f"{done} frames {fps:6.1f} fps"
        if self.tty:
            if final or now - self._last > 0.1:
                self.stream.write("\r" + text + ("\n" if final else ""))
                self.stream.flush()
                self._last = now
        elif (final and done != self._shown) or int(frac * 10) > self._decile:
            self._decile, self._shown = int(frac * 10), done
            self.stream.write(text + "\n")
            self.stream.flush()


def run_media(graph: str | Path, input_spec: str, *, output: str | None = None, backend: str = "auto",
              max_frames: int = -1, progress: bool = True,
              on_packet: Callable[[str, Any], None] | None = None,
              on_unreadable: Callable[[Path, Exception], None] | None = None) -> RunSummary:
    """Run ``graph`` over ``input_spec`` (see :func:`open_input`); write annotated frames to ``output``.

    ``output`` is a video file (by suffix: .mp4, .mov, .mkv, .avi, .webm, .m4v), an image file
    (.png, .jpg, ...: the last frame, in the format its suffix names; for a single image), or
    else a folder: for a folder input, one file per input image with the input's name and
    format (as ``gpulite detect`` writes them); for a video or camera, numbered PNGs
    ``frame_000000.png``, ``frame_000001.png``, ... The images of a folder are unrelated
    (:func:`unrelated_images`: no tracking or smoothing from one to the next); a video's frames
    are tracked (the side packets named ``smooth_*``, pose's smoothing over time, are True). The
    graph's first input stream gets the frames; progress counts packets on
    its first output stream. The first frame is run to completion on its own, so the
    summary's per-frame figures leave its one-time costs out.
    """
    from gpulite.pipeline.calculators import sources

    cfg = load_config(graph)
    if not cfg.input_streams or not cfg.output_streams:
        raise GraphConfigError(f"graph {str(graph)!r} needs an input stream for frames and an output stream")
    image_in, counted = cfg.input_streams[0], cfg.output_streams[0]
    names: dict[int, str] = {}  # a folder's frames: timestamp -> the input file's name
    # frames of one video (or one image) are tracked and smoothed, as the solutions do by default
    side: dict[str, Any] = {name: True for name in cfg.side_packet_names if name.startswith("smooth_")}
    if Path(input_spec).is_dir():
        side = unrelated_images(cfg)
        files = sources.image_files(input_spec)
        names = {i * sources.FRAME_INTERVAL_US: f.name for i, f in enumerate(files)}
    if output:
        add_overlay(cfg, image_in)
    g = Graph(cfg, side_packets={"backend": backend, **side})
    frames, fps, total = open_input(input_spec, max_frames, on_unreadable)
    summary = RunSummary()
    bar = Progress(total) if progress else None
    writer: Any = None
    if output:
        from gpulite.pipeline.calculators.sinks import VideoWriter
        out = Path(output)
        suffix = out.suffix.lower()
        if suffix in sources.VIDEO_SUFFIXES:
            writer = VideoWriter(out, fps)
            g.observe("output_image", lambda p: writer.write(p.payload))
        elif suffix in sources.IMAGE_SUFFIXES:
            from PIL import Image
            out.parent.mkdir(parents=True, exist_ok=True)
            g.observe("output_image", lambda p: Image.fromarray(p.payload).save(out))  # format by suffix
        else:
            from PIL import Image
            out.mkdir(parents=True, exist_ok=True)
            written = [0]

            def save_frame(p: Any) -> None:  # a folder's image under its own name and format, a video's numbered
                name = names.get(p.timestamp, f"frame_{written[0]:06d}.png")
                Image.fromarray(np.ascontiguousarray(p.payload[..., :3])).save(out / name)
                written[0] += 1

            g.observe("output_image", save_frame)

    def count(p: Any) -> None:
        summary.frames_out += 1
        if bar is not None:
            bar.update(summary.frames_out)
        if on_packet is not None:
            on_packet(counted, p)

    g.observe(counted, count)
    t_start = time.perf_counter()
    stats_first: dict[str, Any] = {}
    transfers_first = None
    try:
        g.start()
        t0 = t_first = time.perf_counter()
        summary.startup_seconds = t0 - t_start
        if bar is not None:
            bar.start()
        for ts, frame in frames:
            g.add_packet(image_in, frame, timestamp=ts)
            summary.frames_in += 1
            if summary.frames_in == 1:  # the first frame alone: its one-time costs stay out of the figures
                try:
                    g.wait_for(cfg.output_streams, ts, timeout=FIRST_FRAME_WAIT_S)
                except GraphTimeoutError:  # a graph whose outputs never pass a frame's timestamp before close
                    log.warning("the first frame did not reach %s within %d s; the per-frame figures include it",
                                cfg.output_streams, FIRST_FRAME_WAIT_S)
                    continue
                t_first = time.perf_counter()
                summary.first_frame_seconds = t_first - t0
                stats_first, transfers_first = g.stats(), _transfers(backend)
        g.close()
    finally:
        if writer is not None:
            writer.close()
    summary.seconds = time.perf_counter() - t_first if summary.frames_in > 1 else 0.0
    if bar is not None:
        bar.update(summary.frames_out, final=True)
    stats = g.stats()
    summary.drops = sum(s.dropped for s in stats.values())
    summary.first_node_ms = {k: 1e3 * s.busy_s for k, s in stats_first.items() if s.processed}
    for k, s in stats.items():
        s0 = stats_first.get(k)
        n = s.processed - (s0.processed if s0 else 0)
        if n > 0 and summary.frames_in > 1:
            summary.per_node_ms[k] = 1e3 * (s.busy_s - (s0.busy_s if s0 else 0.0)) / n
    transfers_end = _transfers(backend)
    if transfers_first is not None and transfers_end is not None and summary.frames_in > 1:
        summary.transfers_per_frame = {k: (transfers_end[k] - transfers_first[k]) / (summary.frames_in - 1)
                                       for k in ("bytes_uploaded", "bytes_read_back", "submits")}
        summary.bytes_per_frame = (summary.transfers_per_frame["bytes_uploaded"]
                                   + summary.transfers_per_frame["bytes_read_back"])
    return summary


def _transfers(backend: str) -> dict[str, int] | None:
    if backend == "cpu":
        return None
    try:
        from gpulite.backends.webgpu.pipeline import transfer_stats
    except ImportError:
        return None
    return transfer_stats()
