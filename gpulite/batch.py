"""Batch inference over Ray Data: gpulite's solutions and models on a ``ray.data.Dataset``.

::

    import ray
    from gpulite import batch

    ds = ray.data.from_items([{"path": str(p)} for p in Path("photos").glob("*.jpg")])
    out = batch.map_solution(ds, solution="face_mesh", column="path", concurrency=2)
    out.write_parquet("mesh/")                     # columns: path, faces, landmarks, error

    frames = batch.map_video(["a.mp4", "b.mp4"], solution="pose", frames_per_task=300)

Each function adds a ``Dataset.map_batches`` stage whose callable class builds its solution or
Interpreter once per actor (``concurrency`` actors; with ``num_gpus`` per actor on a cluster
with GPUs), so the models load once per worker, not per batch. Results are columns of plain
numbers and nested lists (``batch.as_array(row["landmarks"])`` is the array), so they go to
Parquet as they are. A row whose input cannot be read or processed gets its message in the
``error`` column and empty results; the job goes on. Needs the ``ray`` extra
(``pip install 'gpulite[ray]'``); importing this module does not import Ray.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

# solution name (gpulite's and the CLI's) -> solution class in gpulite.solutions
SOLUTIONS = {
    "face_detection": "FaceDetector", "face": "FaceDetector",
    "face_mesh": "FaceMesh", "mesh": "FaceMesh",
    "hands": "Hands",
    "pose": "Pose",
    "selfie_segmentation": "SelfieSegmentation", "segment": "SelfieSegmentation",
}
# solution class -> the result columns it adds (besides ``error``)
COLUMNS = {
    "FaceDetector": ("faces", "boxes", "scores", "keypoints"),
    "FaceMesh": ("faces", "landmarks"),
    "Hands": ("hands", "landmarks", "world_landmarks", "handedness", "handedness_scores"),
    "Pose": ("people", "landmarks", "world_landmarks"),
    "SelfieSegmentation": ("mask",),
}
TRACKING = ("FaceMesh", "Hands", "Pose")  # take static_image_mode

_builds = 0  # solutions / interpreters this process built (reported in the ``worker`` column)


def _ray() -> Any:
    try:
        import ray
        import ray.data
    except ImportError as e:
        raise ImportError(f"gpulite.batch needs Ray Data: pip install 'gpulite[ray]' ({e})") from None
    return ray


def solution_class(solution: str) -> str:
    """The gpulite.solutions class name for ``solution``; ValueError naming the choices otherwise."""
    name = SOLUTIONS.get(solution)
    if name is None:
        raise ValueError(f"unknown solution {solution!r}; expected one of {', '.join(SOLUTIONS)}")
    return name


def _actors(concurrency: int | tuple[int, int]) -> Any:
    """Ray Data's ``compute`` for ``concurrency`` actors (an int, or a (min, max) autoscaling range).

    Ray 2.51 deprecated ``map_batches(concurrency=...)`` for callable classes; an
    ``ActorPoolStrategy`` says the same thing in the current API.
    """
    pool = _ray().data.ActorPoolStrategy
    if isinstance(concurrency, tuple):
        low, high = concurrency
        return pool(min_size=low, max_size=high)
    return pool(size=concurrency)


def _gpus(num_gpus: float | None, backend: str | None) -> float:
    """GPUs per actor: as given, else one where the cluster has GPUs and the backend can use them."""
    if num_gpus is not None:
        return num_gpus
    if backend in ("cpu", "litert"):
        return 0
    return 1 if _ray().cluster_resources().get("GPU", 0) > 0 else 0


def _error(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def _image(value: Any) -> np.ndarray:
    """An image cell: a path (decoded upright, as ``gpulite detect`` reads it) or an RGB array."""
    from gpulite.pipeline.calculators.sources import load_image

    if isinstance(value, (str, os.PathLike)):
        return load_image(value)
    if isinstance(value, bytes):
        return load_image(value.decode())
    return np.asarray(value)


def as_array(cell: Any) -> np.ndarray:
    """A result cell back as a float32 array, however it came back (nested lists, or the object
    arrays of arrays that ``Dataset.to_pandas`` gives): ``as_array(row["landmarks"])`` is (faces, 478, 3)."""
    if isinstance(cell, np.ndarray) and cell.dtype != object:
        return cell.astype(np.float32)
    items = list(cell)
    if not items or np.isscalar(items[0]):
        return np.asarray(items, np.float32)
    return np.stack([as_array(c) for c in items])


def _lists(values: Iterable[Any]) -> list[Any]:
    return [np.asarray(v, np.float32).tolist() for v in values]


def result_columns(cls: str, result: Any, *, mask_path: Path | None = None) -> dict[str, Any]:
    """One row's result columns for solution class ``cls`` (see ``COLUMNS``)."""
    if cls == "FaceDetector":
        ds = result.detections or []
        return {"faces": len(ds),
                "boxes": [[d.relative_bounding_box.xmin, d.relative_bounding_box.ymin,
                           d.relative_bounding_box.width, d.relative_bounding_box.height] for d in ds],
                "scores": [float(d.score) for d in ds],
                "keypoints": [[[k.x, k.y] for k in d.keypoints] for d in ds]}
    if cls == "FaceMesh":
        faces = result.multi_face_landmarks or []
        return {"faces": len(faces), "landmarks": _lists(f.array() for f in faces)}
    if cls == "Hands":
        hands = result.multi_hand_landmarks or []
        labels = [h.classification[0] for h in result.multi_handedness or []]
        return {"hands": len(hands), "landmarks": _lists(h.array() for h in hands),
                "world_landmarks": _lists(h.array() for h in result.multi_hand_world_landmarks or []),
                "handedness": [c.label for c in labels], "handedness_scores": [float(c.score) for c in labels]}
    if cls == "Pose":
        people = [p for p in (result.pose_landmarks,) if p is not None]
        world = [p for p in (result.pose_world_landmarks,) if p is not None]
        return {"people": len(people), "landmarks": _lists(_with_visibility(p) for p in people),
                "world_landmarks": _lists(_with_visibility(p) for p in world)}
    mask = np.asarray(result.segmentation_mask, np.float32)
    if mask_path is not None:
        mask_path.parent.mkdir(parents=True, exist_ok=True)
        np.save(mask_path, mask)
        return {"mask": str(mask_path)}
    return {"mask": mask.tolist()}


def _with_visibility(lms: Any) -> np.ndarray:
    """(N, 4): x, y, z, visibility."""
    vis = np.array([p.visibility or 0.0 for p in lms.landmark], np.float32)
    return np.concatenate([lms.array(), vis[:, None]], axis=1)


COUNTS = ("faces", "hands", "people")


def _empty(cls: str, mask_dir: str | None = None) -> dict[str, Any]:
    """A failed row's result columns: a count of 0, empty lists (None for a mask file path).

    0 and empty lists rather than None keep each column one type whatever the rows: Ray's
    ``to_pandas`` fails on a None among arrays, and pandas turns an integer column holding a
    None into float64. The row's ``error`` says it failed.
    """
    return {c: 0 if c in COUNTS else None if c == "mask" and mask_dir else [] for c in COLUMNS[cls]}


def arrow_schema(cls: str, *, mask_dir: str | Path | None = None) -> Any:
    """The Arrow schema of ``gpulite batch``'s rows for solution class ``cls``, whatever the inputs.

    ``path`` (string), ``frame`` (int64: a video's frame index, 0 for an image), ``timestamp_ms``
    (float64: a video frame's time, 0.0 for an image, null in an unreadable video's row), the
    result columns of :data:`COLUMNS` (counts int64, coordinates and scores nested lists of
    float64, handedness lists of strings, ``mask`` a nested list or, with ``mask_dir``, a path)
    and ``error`` (string, null when the row worked).
    """
    import pyarrow as pa

    f = pa.float64()
    types = {"boxes": pa.list_(pa.list_(f)), "scores": pa.list_(f), "keypoints": pa.list_(pa.list_(pa.list_(f))),
             "landmarks": pa.list_(pa.list_(pa.list_(f))), "world_landmarks": pa.list_(pa.list_(pa.list_(f))),
             "handedness": pa.list_(pa.string()), "handedness_scores": pa.list_(f),
             "mask": pa.string() if mask_dir else pa.list_(pa.list_(f))}
    fields = [("path", pa.string()), ("frame", pa.int64()), ("timestamp_ms", f)]
    fields += [(c, pa.int64() if c in COUNTS else types[c]) for c in COLUMNS[cls]]
    return pa.schema([*fields, ("error", pa.string())])


def _worker_id() -> str:
    return f"{socket.gethostname()}:{os.getpid()}:{_builds}"


class _Solver:
    """Builds one solution per actor; the base of the image and video mappers."""

    def __init__(self, cls: str, backend: str | None, options: Mapping[str, Any], static: bool,
                 mask_dir: str | None, with_worker: bool) -> None:
        global _builds
        import gpulite.solutions as solutions

        kwargs = dict(options)
        if cls in TRACKING:
            kwargs.setdefault("static_image_mode", static)
        self.solution = getattr(solutions, cls)(backend=backend, **kwargs)
        _builds += 1
        self.cls, self.mask_dir, self.worker = cls, mask_dir, _worker_id() if with_worker else None
        self.count = 0  # rows this actor processed

    def row(self, image: Any, key: str, timestamp_ms: float | None = None) -> dict[str, Any]:
        mask_path = Path(self.mask_dir) / f"{key}.npy" if self.mask_dir else None
        try:
            result = self.solution.process(_image(image), timestamp_ms=timestamp_ms)
            row = {**result_columns(self.cls, result, mask_path=mask_path), "error": None}
        except Exception as e:  # one bad row is recorded, never a failed job
            row = {**_empty(self.cls, self.mask_dir), "error": _error(e)}
        if self.worker is not None:
            row["worker"] = self.worker
        return row


class _ImageMapper(_Solver):
    def __init__(self, cls: str, column: str, backend: str | None, options: Mapping[str, Any],
                 mask_dir: str | None, with_worker: bool) -> None:
        super().__init__(cls, backend, options, True, mask_dir, with_worker)
        self.column = column

    def __call__(self, batch: Any) -> Any:
        if self.column not in batch.columns:
            raise KeyError(f"gpulite.batch: the dataset has no column {self.column!r}; it has {list(batch.columns)}")
        rows = []
        for value in batch[self.column]:
            self.count += 1
            key = Path(value).stem if isinstance(value, (str, os.PathLike)) else f"{os.getpid()}_{self.count}"
            rows.append(self.row(value, key))
        return _table(batch, rows)


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, bytes, int, float, bool, np.generic))


def _table(batch: Any, rows: list[dict[str, Any]]) -> Any:
    """The batch's scalar columns (ids, paths) followed by the result rows, as an Arrow table.

    Arrow, not pandas: result cells are nested lists or None, which Ray's pandas path would try
    to cast to its tensor type and fail on the None of an error row.
    """
    import pyarrow as pa

    keep = [c for c in batch.columns if len(batch) and all(_scalar(v) for v in batch[c])]
    return pa.Table.from_pylist([{**{c: batch[c].iloc[i] for c in keep}, **row} for i, row in enumerate(rows)])


def map_solution(ds: Any, solution: str = "face_mesh", *, column: str = "image", backend: str | None = "auto",
                 concurrency: int | tuple[int, int] = 1, num_gpus: float | None = None, batch_size: int = 8,
                 mask_dir: str | Path | None = None, with_worker: bool = False, **options: Any) -> Any:
    """Run a solution on every image of ``ds`` (column ``column``: paths or RGB uint8 arrays).

    Parameters
    ----------
    solution : str
        ``face_detection``/``face``, ``face_mesh``/``mesh``, ``hands``, ``pose``,
        ``selfie_segmentation``/``segment``.
    column : str
        The images: file paths (decoded in the actors, EXIF orientation applied) or arrays
        (e.g. ``ray.data.read_images``' ``image``). A path column is kept in the output; an
        array column is dropped.
    backend : str
        The gpulite backend in each actor (``"auto"``, ``"litert"``, ``"cpu"``, ``"webgpu"``).
    concurrency : int or (min, max)
        Actors (each builds its solution once).
    num_gpus : float, optional
        GPUs per actor; default one where the cluster has GPUs and ``backend`` can use them.
    mask_dir : path, optional
        Segmentation masks are written there as ``<path stem>.npy`` and the ``mask`` column
        holds the file's path (else the mask itself, as nested lists).
    with_worker : bool
        Add a ``worker`` column: ``host:pid:build`` of the actor that made the row (build is
        how many solutions that process had built then: 1 in a healthy run).
    **options
        The solution's own arguments (``max_num_faces=2``, ``refine_landmarks=True``, ...).

    Returns
    -------
    ray.data.Dataset
        The input's other columns, the solution's result columns (``COLUMNS``) and ``error``
        (None, or the message for that row).
    """
    cls = solution_class(solution)
    _ray()
    return ds.map_batches(
        _ImageMapper, batch_format="pandas", batch_size=batch_size, compute=_actors(concurrency),
        num_gpus=_gpus(num_gpus, backend),
        fn_constructor_kwargs={"cls": cls, "column": column, "backend": backend, "options": dict(options),
                               "mask_dir": None if mask_dir is None else str(mask_dir),
                               "with_worker": with_worker})


# -- videos -----------------------------------------------------------------------------------------
def frame_count(path: str | Path) -> int:
    """Frames in a video: what the container says, else counted by decoding."""
    from gpulite.pipeline.calculators.sources import VideoReader, video_info

    n = video_info(path).frames
    if n:
        return n
    with VideoReader(path) as reader:
        return sum(1 for _ in reader)


def video_ranges(paths: Sequence[str | Path], frames_per_task: int) -> list[dict[str, Any]]:
    """One row per (video, frame range) of ``frames_per_task`` frames; an unreadable video is one error row.

    The last range's ``stop`` is -1: it reads to the video's end, so a frame count the
    container (or OpenCV's estimate) got too low loses no frames.
    """
    if frames_per_task < 1:
        raise ValueError(f"frames_per_task must be at least 1, got {frames_per_task}")
    rows: list[dict[str, Any]] = []
    for p in paths:
        try:
            n = frame_count(p)
        except Exception as e:
            rows.append({"path": str(p), "start": 0, "stop": 0, "error": _error(e)})
            continue
        rows += [{"path": str(p), "start": s, "stop": s + frames_per_task if s + frames_per_task < n else -1,
                  "error": None} for s in range(0, n, frames_per_task)]  # the last range reads to the end
    return rows


class _VideoMapper(_Solver):
    """Runs one frame range per row, tracking from the range's first frame (the solution is reset there)."""

    def __init__(self, cls: str, backend: str | None, options: Mapping[str, Any], mask_dir: str | None,
                 with_worker: bool) -> None:
        super().__init__(cls, backend, options, False, mask_dir, with_worker)

    def __call__(self, batch: Any) -> Any:
        import pyarrow as pa

        rows: list[dict[str, Any]] = []
        for path, start, stop, error in zip(batch["path"], batch["start"], batch["stop"], batch["error"],
                                            strict=True):
            rows += self.frames(path, int(start), int(stop), error)
        return pa.Table.from_pylist(rows)

    def frames(self, path: str, start: int, stop: int, error: str | None) -> list[dict[str, Any]]:
        from gpulite.pipeline.calculators.sources import VideoReader

        head = {"path": path, "frame": start, "timestamp_ms": None}
        if error is not None:
            return [{**head, **_empty(self.cls, self.mask_dir), "error": error}]
        self.solution.reset()
        rows = []
        try:
            with VideoReader(path, max_frames=stop) as reader:
                for i, (ts_us, rgb) in enumerate(reader):
                    if i >= start:
                        key = f"{Path(path).stem}_{i:06d}"
                        rows.append({**head, "frame": i, "timestamp_ms": ts_us / 1000,
                                     **self.row(rgb, key, timestamp_ms=ts_us / 1000)})
        except Exception as e:  # the file stopped decoding: the frames so far stay, one row says why
            rows.append({**head, "frame": start + len(rows), **_empty(self.cls, self.mask_dir), "error": _error(e)})
        return rows


def map_video(paths: Sequence[str | Path], solution: str = "pose", *, frames_per_task: int = 300,
              backend: str | None = "auto", concurrency: int | tuple[int, int] = 1, num_gpus: float | None = None,
              mask_dir: str | Path | None = None, with_worker: bool = False, **options: Any) -> Any:
    """Run a solution over videos in video mode, one task per range of ``frames_per_task`` frames.

    Frames are counted on the driver (from the container, else by decoding), then each range
    is decoded and processed by an actor. Tracking (and the landmark filters) restart at each
    range's first frame, so results near a boundary can differ slightly from one pass over
    the whole video; ``frames_per_task`` larger than the video gives exactly that one pass.

    Returns
    -------
    ray.data.Dataset
        One row per frame, ordered by (path, frame): ``path``, ``frame``, ``timestamp_ms``,
        the result columns and ``error``. An unreadable video is one row with ``frame`` 0 and
        the error.
    """
    cls = solution_class(solution)
    ray = _ray()
    ranges = ray.data.from_items(video_ranges(list(paths), frames_per_task))
    out = ranges.map_batches(
        _VideoMapper, batch_format="pandas", batch_size=1, compute=_actors(concurrency),
        num_gpus=_gpus(num_gpus, backend),
        fn_constructor_kwargs={"cls": cls, "backend": backend, "options": dict(options),
                               "mask_dir": None if mask_dir is None else str(mask_dir),
                               "with_worker": with_worker})
    return out.sort(["path", "frame"])


# -- models ---------------------------------------------------------------------------------------
class _ModelMapper:
    def __init__(self, model: str, inputs: Mapping[str, str], outputs: Sequence[str] | None,
                 backend: str | None, with_worker: bool) -> None:
        global _builds
        from gpulite import Interpreter

        self.it = Interpreter(model_path=model, backend=backend)
        self.it.allocate_tensors()
        _builds += 1
        by_name = {d["name"]: d for d in self.it.get_input_details()}
        unknown = [n for n in inputs if n not in by_name]
        if unknown:
            raise KeyError(f"gpulite.batch.map_model: {model!r} has no input {unknown}; its inputs are {list(by_name)}")
        self.inputs = [(by_name[n], col) for n, col in inputs.items()]
        outs = {d["name"]: d for d in self.it.get_output_details()}
        names = list(outs) if outputs is None else list(outputs)
        missing = [n for n in names if n not in outs]
        if missing:
            raise KeyError(f"gpulite.batch.map_model: {model!r} has no output {missing}; its outputs are {list(outs)}")
        self.outputs = [(n, outs[n]["index"]) for n in names]
        self.worker = _worker_id() if with_worker else None

    def row(self, values: Sequence[Any]) -> dict[str, Any]:
        try:
            for (d, _), v in zip(self.inputs, values, strict=True):
                x = np.asarray(v, d["dtype"])
                if x.shape != tuple(d["shape"]) and x.size == int(np.prod(d["shape"])):
                    x = x.reshape(d["shape"])  # a row without its batch dimension
                self.it.set_tensor(d["index"], x)
            self.it.invoke()
            row = {n: self.it.get_tensor(i).tolist() for n, i in self.outputs}
            row["error"] = None
        except Exception as e:
            row = {n: [] for n, _ in self.outputs}
            row["error"] = _error(e)
        if self.worker is not None:
            row["worker"] = self.worker
        return row

    def __call__(self, batch: Any) -> Any:
        cols = [batch[c] for _, c in self.inputs]
        return _table(batch, [self.row(values) for values in zip(*cols, strict=True)])


def map_model(ds: Any, model: str, *, inputs: Mapping[str, str] | Sequence[str], outputs: Sequence[str] | None = None,
              backend: str | None = "auto", concurrency: int | tuple[int, int] = 1, num_gpus: float | None = None,
              batch_size: int = 32, with_worker: bool = False) -> Any:
    """Run a ``.tflite`` model (a path or zoo name) on every row of ``ds``.

    ``inputs`` maps the model's input tensor names to columns (a list gives the columns in
    the model's input order); each cell is an array of the input's shape (with or without
    its batch dimension of 1). ``outputs`` names the output tensors to keep (default all),
    each added as a column of nested lists, plus ``error``.
    """
    _ray()
    if not isinstance(inputs, Mapping):  # the model's input names, read from the file (no interpreter built here)
        from gpulite import zoo
        from gpulite.model.reader import load

        graph = load(zoo.resolve(model)).subgraphs[0]
        names = [graph.tensors[i].name for i in graph.inputs]
        if len(names) != len(inputs):
            raise ValueError(f"map_model: {model!r} has {len(names)} inputs {names}, got {len(inputs)} columns")
        inputs = dict(zip(names, inputs, strict=True))
    return ds.map_batches(
        _ModelMapper, batch_format="pandas", batch_size=batch_size, compute=_actors(concurrency),
        num_gpus=_gpus(num_gpus, backend),
        fn_constructor_kwargs={"model": model, "inputs": dict(inputs), "outputs": outputs, "backend": backend,
                               "with_worker": with_worker})
