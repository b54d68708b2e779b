"""``gpulite run MODEL --input X``: any model on an .npy, an .npz or an image; outputs checked
against LiteRT; bad inputs are clear errors with exit status 2."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from gpulite import zoo
from gpulite.cli import main
from tests.cli.support import ASTRONAUT, error_lines

MODEL = "face_detection_short_range"  # embedded in the package: no download


def _litert(x: np.ndarray) -> dict[str, np.ndarray]:
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_path=str(zoo.resolve(MODEL)))
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}


def _check_against_litert(out: Path, x: np.ndarray) -> None:
    want = _litert(x)
    with np.load(out) as got:
        assert sorted(got.files) == sorted(want)
        for k, w in want.items():
            np.testing.assert_allclose(got[k], w, rtol=1e-4, atol=1e-3 * float(np.abs(w).max()), err_msg=k)


def test_run_on_an_npy_prints_each_output_and_writes_npz(tmp_path: Path, capsys):
    x = np.random.default_rng(0).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "o" / "out.npz"
    assert main(["run", MODEL, "--input", str(tmp_path / "x.npy"), "--backend", "cpu", "-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "input      input" in text and "[1, 128, 128, 3]     float32  <- x.npy" in text
    for name, shape in (("regressors", "[1, 896, 16]"), ("classificators", "[1, 896, 1]")):
        line = next(row for row in text.splitlines() if row.startswith(f"output     {name}"))
        assert shape in line and "float32" in line and "min " in line and "std " in line, line
    assert f"wrote      {out}" in text
    _check_against_litert(out, x)


def test_run_on_an_image_resizes_and_maps_to_the_range(tmp_path: Path, capsys):
    out = tmp_path / "out.npz"
    assert main(["run", MODEL, "--input", str(ASTRONAUT), "--range=-1,1", "--backend", "cpu", "-o", str(out)]) == 0
    assert "320x320 resized to 128x128, 0..255 -> -1..1" in capsys.readouterr().out
    with Image.open(ASTRONAUT) as im:
        pixels = np.asarray(im.convert("RGB").resize((128, 128), Image.BILINEAR), np.float64)
    _check_against_litert(out, (pixels / 127.5 - 1.0).astype(np.float32)[None])


def test_run_on_an_npz_keyed_by_input_name_and_float64_accepted(tmp_path: Path, capsys):
    x = np.random.default_rng(1).uniform(-1, 1, (1, 128, 128, 3))  # float64: converted to the float32 input
    np.savez(tmp_path / "x.npz", input=x)
    out = tmp_path / "out.npz"
    assert main(["run", MODEL, "--input", str(tmp_path / "x.npz"), "--backend", "cpu", "-o", str(out)]) == 0
    _check_against_litert(out, x.astype(np.float32))


def _bad_inputs(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (input file, what the error line must say)."""
    np.save(tmp / "shape.npy", np.zeros((1, 2), np.float32))
    np.save(tmp / "dtype.npy", np.zeros((1, 128, 128, 3), bool))
    np.savez(tmp / "keys.npz", image=np.zeros((1, 128, 128, 3), np.float32))
    (tmp / "junk.npy").write_bytes(b"not numpy")
    (tmp / "junk.npz").write_bytes(b"not numpy")
    (tmp / "x.txt").write_text("1 2 3")
    return {
        "shape": ("shape.npy", "input 'input' expects [1, 128, 128, 3] float32, got shape [1, 2]"),
        "dtype": ("dtype.npy", "input 'input' expects [1, 128, 128, 3] float32, got dtype bool"),
        "keys": ("keys.npz", "the .npz must hold exactly the model's inputs ['input']; missing ['input'], "
                             "unknown ['image']"),
        # np.load takes a file without the magic for a pickle, and said "contains pickled (object) data"
        "junk": ("junk.npy", "cannot read the .npy file: not a NumPy .npy file (it does not start with "
                             "b'\\x93NUMPY'"),
        "junk npz": ("junk.npz", "cannot read the .npz file: not a NumPy .npz file (a zip archive"),
        "suffix": ("x.txt", "expected an .npy, an .npz or an image"),
    }


def test_bad_inputs_are_clear_errors_with_status_2(tmp_path: Path, capsys):
    for name, (file, message) in _bad_inputs(tmp_path).items():
        assert main(["run", MODEL, "--input", str(tmp_path / file), "--backend", "cpu"]) == 2, name
        captured = capsys.readouterr()
        lines = error_lines(captured.err)
        assert len(lines) == 1 and lines[0].startswith("gpulite: error: ") and message in lines[0], (name, lines)
        assert "output" not in captured.out, name


def test_a_range_that_would_do_nothing_is_refused(tmp_path: Path, capsys):
    """--range maps an image into a float input; given for an array or a uint8 input it was ignored."""
    from gpulite.testing.tflite_writer import ModelBuilder

    mb = ModelBuilder()
    x = mb.input("pixels", (1, 8, 8, 3), np.uint8)
    y = mb.tensor("y", (1, 8, 8, 3), np.float32)
    mb.op("CAST", [x], [y])
    mb.output(y)
    (tmp_path / "u8.tflite").write_bytes(mb.build())
    np.save(tmp_path / "x.npy", np.zeros((1, 128, 128, 3), np.float32))
    png = str(ASTRONAUT)
    for argv, message in (
            ([str(tmp_path / "u8.tflite"), "--input", png], "--range '-1,1': it maps pixels into a float input; "
                                                            "input 'pixels' expects [1, 8, 8, 3] uint8"),
            ([MODEL, "--input", str(tmp_path / "x.npy")], "--range '-1,1': it maps an image's pixels; --input")):
        assert main(["run", *argv, "--range=-1,1", "--backend", "cpu"]) == 2
        lines = error_lines(capsys.readouterr().err)
        assert len(lines) == 1 and message in lines[0], lines
    assert main(["run", str(tmp_path / "u8.tflite"), "--input", png, "--backend", "cpu"]) == 0  # without: the pixels


def test_output_must_be_npz_and_is_checked_before_running(tmp_path: Path, capsys):
    np.save(tmp_path / "x.npy", np.zeros((1, 128, 128, 3), np.float32))
    assert main(["run", MODEL, "--input", str(tmp_path / "x.npy"), "-o", str(tmp_path / "out.txt")]) == 2
    captured = capsys.readouterr()
    assert "the outputs are written as .npz" in captured.err and captured.out == ""
    assert main(["run", MODEL, "--input", str(tmp_path / "x.npy"), "--range", "1,0"]) == 2
    assert "LO must be below HI" in capsys.readouterr().err


def test_run_default_backend_is_auto_by_measurement(tmp_path: Path, capsys, monkeypatch):
    """``--backend auto`` (the default) is ``Interpreter(backend="auto")``: the backend measured
    fastest for the model on this machine, and the line after the model's says what was measured."""
    monkeypatch.setenv("GPULITE_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("GPULITE_BACKEND", raising=False)
    monkeypatch.delenv("GPULITE_AUTO_MEASURE", raising=False)
    x = np.random.default_rng(1).uniform(-1, 1, (1, 128, 128, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out.npz"
    assert main(["run", MODEL, "--input", str(tmp_path / "x.npy"), "--runs", "1", "-o", str(out)]) == 0
    reason = next(row for row in capsys.readouterr().out.splitlines() if row.startswith("backend    "))
    assert "auto: measured" in reason and "fastest" in reason, reason
    assert (tmp_path / "cache" / "auto_backend.json").is_file()
    _check_against_litert(out, x)
