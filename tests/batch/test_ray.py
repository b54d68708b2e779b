"""gpulite.batch on a local Ray (``ray.init(num_cpus=2)``): results equal to running the solution
directly, one error row per bad input, one solution built per actor."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from tests.assets import load_image
from tests.solutions.video import make_frames, read_video, write_video

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")

from gpulite import batch  # noqa: E402
from gpulite.solutions import FaceDetector, FaceMesh, Pose  # noqa: E402

N_IMAGES = 48


@pytest.fixture(scope="module")
def local_ray():
    import os

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, configure_logging=False)
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = False
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, list[Path]]:
    """48 images made from the shipped photos (crops, flips, scales), plus one corrupt file."""
    root = tmp_path_factory.mktemp("images")
    photos = [load_image(n) for n in ("astronaut.png", "chelsea.png", "coffee.png")]
    rng = np.random.default_rng(0)
    paths = []
    for k in range(N_IMAGES):
        img = photos[k % 3]
        h, w = img.shape[:2]
        y, x = rng.integers(0, h // 5), rng.integers(0, w // 5)
        crop = img[y : y + h - h // 5, x : x + w - w // 5]
        if k % 2:
            crop = crop[:, ::-1]
        im = Image.fromarray(np.ascontiguousarray(crop)).resize((int(crop.shape[1] * (0.6 + 0.1 * (k % 5))),
                                                                  int(crop.shape[0] * (0.6 + 0.1 * (k % 5)))))
        p = root / f"img{k:02d}.png"
        im.save(p)
        paths.append(p)
    bad = root / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff not really a jpeg")
    return bad, paths


def test_face_mesh_over_a_folder_equals_the_direct_run_and_one_bad_file_is_one_error_row(local_ray, folder):
    bad, paths = folder
    items = [{"path": str(p)} for p in [*paths[:20], bad, *paths[20:]]]
    ds = ray.data.from_items(items)
    out = batch.map_solution(ds, "face_mesh", column="path", backend="cpu", concurrency=2, batch_size=4,
                             with_worker=True).to_pandas()
    assert len(out) == N_IMAGES + 1
    errors = out[out["error"].notna()]
    assert list(errors["path"]) == [str(bad)] and "ImageReadError" in errors["error"].iloc[0]
    assert len(errors["landmarks"].iloc[0]) == 0
    good = out[out["error"].isna()].set_index("path")
    with FaceMesh(static_image_mode=True, backend="cpu") as mesh:
        for p in paths:
            faces = mesh.process(np.asarray(Image.open(p).convert("RGB"))).multi_face_landmarks
            want = [f.array() for f in faces or []]
            row = good.loc[str(p)]
            assert row["faces"] == len(want)
            got = list(batch.as_array(row["landmarks"]))
            for g, w in zip(got, want, strict=True):
                np.testing.assert_array_equal(g, w)
    assert good["faces"].sum() >= N_IMAGES // 3 - 2  # the astronaut's face, most crops
    # one solution per actor: at most two actors (concurrency=2), each on its first build
    workers = set(out["worker"])
    assert 1 <= len(workers) <= 2
    assert {w.rsplit(":", 1)[1] for w in workers} == {"1"}


def test_face_detection_on_array_column(local_ray):
    img = load_image("astronaut.png")
    ds = ray.data.from_items([{"image": img, "id": 0}, {"image": np.zeros((4, 4), np.uint8), "id": 1}])
    out = batch.map_solution(ds, "face", column="image", backend="cpu").to_pandas().sort_values("id")
    assert "image" not in out.columns
    with FaceDetector(backend="cpu") as fd:
        want = fd.process(img).detections
    row = out.iloc[0]
    assert row["error"] is None or row["error"] is pd.NA
    assert row["faces"] == len(want) == 1
    b = want[0].relative_bounding_box
    np.testing.assert_allclose(batch.as_array(row["boxes"])[0], [b.xmin, b.ymin, b.width, b.height], rtol=0, atol=1e-6)
    assert "ImageError" in out.iloc[1]["error"]


def test_pose_over_a_video_in_ranges_is_ordered_and_tracks_within_each_range(local_ray, tmp_path):
    frames = make_frames(9)
    path = write_video(tmp_path / "clip.mp4", frames, fps=10)
    decoded = read_video(path)
    out = batch.map_video([path, tmp_path / "missing.mp4"], "pose", frames_per_task=4, backend="cpu",
                          concurrency=2).to_pandas()
    clip = out[out["path"] == str(path)]
    assert list(clip["frame"]) == list(range(9))
    assert clip["error"].isna().all()
    missing = out[out["path"] == str(tmp_path / "missing.mp4")]
    assert len(missing) == 1 and "does not exist" in missing["error"].iloc[0]
    # each range of 4 frames tracks from its first frame, as one solution run over those frames
    for start in (0, 4, 8):
        with Pose(backend="cpu") as pose:
            for i in range(start, min(start + 4, 9)):
                ts = clip["timestamp_ms"].iloc[i]
                want = pose.process(decoded[i], timestamp_ms=ts).pose_landmarks
                got = clip["landmarks"].iloc[i]
                assert (want is None) == (len(got) == 0)
                if want is not None:
                    np.testing.assert_array_equal(batch.as_array(got)[0, :, :3], want.array())


def test_map_model_rows_and_errors(local_ray):
    from gpulite import Interpreter

    it = Interpreter(model_path="face_detection_short_range", backend="cpu")
    it.allocate_tensors()
    d = it.get_input_details()[0]
    rng = np.random.default_rng(1)
    xs = [rng.uniform(-1, 1, d["shape"][1:]).astype(np.float32) for _ in range(3)]
    rows = [{"x": x} for x in xs] + [{"x": np.zeros(5, np.float32)}]
    out = batch.map_model(ray.data.from_items(rows), "face_detection_short_range", inputs=["x"],
                          backend="cpu").to_pandas()
    names = [o["name"] for o in it.get_output_details()]
    for x, (_, row) in zip(xs, out.iloc[:3].iterrows(), strict=True):
        it.set_tensor(d["index"], x[None])
        it.invoke()
        for o in it.get_output_details():
            np.testing.assert_array_equal(batch.as_array(row[o["name"]]), it.get_tensor(o["index"]))
    assert out.iloc[3]["error"] is not None and all(len(out.iloc[3][n]) == 0 for n in names)


def test_unknown_solution_and_missing_ray_message():
    with pytest.raises(ValueError, match="unknown solution 'faces'"):
        batch.solution_class("faces")


def test_cli_batch_writes_parquet_and_exits_2_for_a_bad_file(local_ray, folder, tmp_path, capsys):
    import pyarrow.parquet as pq

    from gpulite.cli import main

    bad, paths = folder
    listing = tmp_path / "paths.csv"
    listing.write_text("path\n" + "".join(f"{p}\n" for p in [*paths[:5], bad]))
    out = tmp_path / "faces.parquet"
    assert main(["batch", "face", str(listing), "-o", str(out), "--backend", "cpu", "--workers", "1"]) == 2
    table = pq.read_table(out).to_pandas()
    assert sorted(table["path"]) == sorted(str(p) for p in [*paths[:5], bad])
    assert table["error"].notna().sum() == 1
    assert "6 rows (6 images, 0 videos), 1 with errors" in capsys.readouterr().out


def test_cli_batch_input_errors(tmp_path):
    from gpulite.cli import main

    assert main(["batch", "face", str(tmp_path / "nothing"), "-o", str(tmp_path / "x.parquet")]) == 2
    assert main(["batch", "face", str(tmp_path), "-o", str(tmp_path / "x.csv")]) == 2


def _mixed(tmp_path: Path, folder) -> Path:
    """Two images (one corrupt) and a three-frame video in one folder."""
    import shutil

    bad, paths = folder
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    shutil.copy(paths[0], mixed / "a.png")
    shutil.copy(bad, mixed / "b.jpg")
    write_video(mixed / "c.mp4", make_frames(3), fps=10)
    return mixed


def test_cli_batch_columns_and_types_do_not_depend_on_the_mix(local_ray, folder, tmp_path):
    """Issue 24: a mixed folder lost the video's frame/timestamp_ms columns, and an error row turned
    ``faces`` into float64. Every run now writes ``batch.arrow_schema``, and pandas reads one dtype each."""
    import pyarrow.parquet as pq

    from gpulite.cli import main

    mixed = _mixed(tmp_path, folder)
    only_image = tmp_path / "one"
    only_image.mkdir()
    (only_image / "a.png").write_bytes((mixed / "a.png").read_bytes())
    schema = batch.arrow_schema("FaceDetector")
    dtypes = None
    for src, status in ((mixed, 2), (only_image, 0)):
        out = tmp_path / f"{src.name}.parquet"
        assert main(["batch", "face", str(src), "-o", str(out), "--backend", "cpu", "--workers", "1"]) == status
        table = pq.read_table(out)
        assert table.schema.remove_metadata() == schema, table.schema
        frame = table.to_pandas()
        assert dtypes is None or frame.dtypes.to_dict() == dtypes
        dtypes = frame.dtypes.to_dict()
        assert str(dtypes["faces"]) == "int64" and str(dtypes["frame"]) == "int64"
    rows = pq.read_table(tmp_path / "mixed.parquet").to_pandas().set_index("path")
    assert rows.loc[str(mixed / "a.png"), "frame"] == 0 and rows.loc[str(mixed / "a.png"), "timestamp_ms"] == 0.0
    video = rows.loc[str(mixed / "c.mp4")]
    assert list(video["frame"]) == [0, 1, 2] and list(video["timestamp_ms"]) == [0.0, 100.0, 200.0]
    bad = rows.loc[str(mixed / "b.jpg")]
    assert bad["error"].startswith("ImageReadError") and bad["faces"] == 0 and len(bad["boxes"]) == 0


def test_map_calls_use_rays_current_api(local_ray):
    """No ``concurrency is deprecated`` warning from gpulite's own map_batches calls (Ray 2.51+), which
    Ray logs on its ``ray.data`` logger (not through ``warnings``) when the stage is added."""
    import logging
    import warnings

    ds = ray.data.from_items([{"path": "x.png"}])
    logged: list[str] = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = lambda record: logged.append(record.getMessage())
    logging.getLogger("ray.data").addHandler(handler)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            batch.map_solution(ds, "face", column="path", backend="cpu", concurrency=2)
            batch.map_solution(ds, "face", column="path", backend="cpu", concurrency=(1, 2))
            batch.map_video([], "face", backend="cpu", concurrency=2)
    finally:
        logging.getLogger("ray.data").removeHandler(handler)
    said = logged + [str(w.message) for w in caught]
    assert not [m for m in said if "deprecated" in m], said


def test_cli_batch_stderr_has_no_ray_info_flood(folder, tmp_path):
    """A fresh ``gpulite batch`` process: Ray's INFO lines (start-up, execution plans, progress logged
    once a second off a terminal) and the deprecation warning stay out of stderr."""
    from tests.cli.support import gpulite

    _, paths = folder
    src = tmp_path / "two"
    src.mkdir()
    for p in paths[:2]:
        (src / p.name).write_bytes(p.read_bytes())
    r = gpulite("batch", "face", str(src), "-o", str(tmp_path / "out.parquet"), "--backend", "cpu", "--workers", "1",
                env={"RAY_USAGE_STATS_ENABLED": "0"})
    assert r.returncode == 0, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert not [line for line in lines if " INFO " in line or "deprecated" in line], lines
    assert "2 rows (2 images, 0 videos), 0 with errors" in r.stdout
