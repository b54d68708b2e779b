"""Exit codes and error lines: input and usage errors exit 2 in every command, runtime failures 1;
one ``gpulite: error:`` line without a traceback, the traceback too under ``-v`` (before or after
the command); a file that is not a model says so."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from gpulite.cli import build_parser, main
from gpulite.errors import ModelError, UnsupportedOpError
from gpulite.model.reader import load
from gpulite.tasks.bundle import assemble
from tests.cli.support import ASTRONAUT, error_lines, gpulite, write_image


def _input_errors(tmp: Path) -> dict[str, list[str]]:
    """One input or usage error per command: name -> argv."""
    png = write_image(tmp / "in.png")
    np.save(tmp / "wrong.npy", np.zeros((1, 2), np.float32))
    return {
        "inspect, a file that is not a model": ["inspect", str(png)],
        "inspect, no such model": ["inspect", str(tmp / "missing.tflite")],
        "run, wrong input shape": ["run", "face_detection_short_range", "--input", str(tmp / "wrong.npy")],
        "run, no such input": ["run", "face_detection_short_range", "--input", str(tmp / "none.npy")],
        "run, --threads below -1": ["run", "face_detection_short_range", "--input", str(png), "--threads=-3"],
        "detect, no such input": ["detect", "face", str(tmp / "none.png")],
        "detect, option of another task": ["detect", "pose", str(png), "--refine"],
        "graph run, no such graph": ["graph", "run", "no_such_graph", "--input", str(png)],
        "graph run, no such input": ["graph", "run", "face_detection", "--input", str(tmp / "none.mp4")],
        "demo, no such image": ["demo", "--image", str(tmp / "none.png")],
        "graph run, --max-frames 0": ["graph", "run", "face_detection", "--input", str(png), "--max-frames", "0"],
        "profile, --json under a file": ["profile", "face_detection_short_range", "--backend", "cpu",
                                         "--json", str(png / "profile.json")],
        "bench, runs below 1": ["bench", "face_detection_short_range", "--runs", "0"],
        "argparse, unknown option": ["info", "--no-such-option"],
        "argparse, no command": [],
    }


def test_input_errors_exit_2_with_one_line_in_every_command(tmp_path: Path, capsys):
    for what, argv in _input_errors(tmp_path).items():
        assert main(argv) == 2, what
        err = capsys.readouterr().err
        assert "Traceback" not in err, what
        lines = error_lines(err)
        if what.startswith("argparse"):
            assert lines[-1].startswith("gpulite") and "error:" in lines[-1], (what, lines)
        else:
            assert len(lines) == 1 and lines[0].startswith("gpulite: error: "), (what, lines)


def test_a_runtime_failure_exits_1_with_one_line(monkeypatch, capsys):
    def broken(*args, **kwargs):
        raise UnsupportedOpError("CUMSUM", 3, "cpu")

    monkeypatch.setattr("gpulite.commands.inspect.inspect_model", broken)
    assert main(["inspect", "face_detection_short_range"]) == 1
    assert error_lines(capsys.readouterr().err) == [
        "gpulite: error: op CUMSUM (node 3) has no kernel on backend 'cpu'"]

    def bug(*args, **kwargs):
        raise KeyError("oops")

    monkeypatch.setattr("gpulite.commands.inspect.inspect_model", bug)
    assert main(["inspect", "face_detection_short_range"]) == 1
    assert error_lines(capsys.readouterr().err) == ["gpulite: error: KeyError: 'oops'"]


def test_inspect_a_png_says_it_is_not_a_tflite_file(tmp_path: Path):
    r = gpulite("inspect", str(ASTRONAUT))
    assert r.returncode == 2
    assert error_lines(r.stderr) == ["gpulite: error: not a .tflite file (no TFL3 identifier): "
                                     "bytes 4-8 are b'\\r\\n\\x1a\\n', expected b'TFL3'"]
    assert r.stdout == ""


def test_a_task_bundle_is_named_as_one(tmp_path: Path, capsys):
    """A .task where a .tflite goes, and a damaged .task, are named for what they are."""
    bundle = assemble({"face_detector.tflite": b"x" * 1000, "labels.txt": b"a\nb\n"})
    whole, cut = tmp_path / "whole.task", tmp_path / "cut.task"
    whole.write_bytes(bundle)
    cut.write_bytes(bundle[:700])
    png = write_image(tmp_path / "in.png")
    assert main(["run", str(whole), "--input", str(png)]) == 2
    assert "a zip archive: a MediaPipe Tasks .task bundle" in error_lines(capsys.readouterr().err)[0]
    assert main(["inspect", str(cut)]) == 2
    assert error_lines(capsys.readouterr().err) == [
        f"gpulite: error: {str(cut)!r}: Unable to open zip archive: the 700-byte model asset is not a zip archive "
        "(a .task bundle), or it is truncated"]


@pytest.mark.parametrize("data", [ASTRONAUT.read_bytes(), b"", b"TFL", b"\x10\x00\x00\x00ABCD" + bytes(64)])
def test_reader_checks_the_identifier_before_following_offsets(data: bytes):
    with pytest.raises(ModelError, match=r"^not a \.tflite file \(no TFL3 identifier\)"):
        load(data)


@pytest.mark.parametrize("argv", [["-v", "inspect", "{png}"], ["inspect", "{png}", "-v"], ["inspect", "-v", "{png}"],
                                  ["graph", "run", "-v", "nope", "--input", "{png}"],
                                  ["graph", "run", "nope", "--input", "{png}", "--verbose"]])
def test_verbose_before_or_after_the_command_prints_the_traceback(tmp_path: Path, argv: list[str]):
    png = str(write_image(tmp_path / "in.png"))
    r = gpulite(*[a.format(png=png) for a in argv])
    assert r.returncode == 2
    assert "Traceback (most recent call last)" in r.stderr, r.stderr
    assert error_lines(r.stderr)[-1].startswith("gpulite: error: ")


def test_a_bad_environment_variable_is_a_usage_error():
    r = gpulite("run", "face_detection_short_range", "--input", str(ASTRONAUT), env={"GPULITE_NUM_THREADS": "abc"})
    assert r.returncode == 2, r.stderr
    lines = error_lines(r.stderr)
    assert len(lines) == 1 and lines[0].startswith("gpulite: error: environment variable GPULITE_NUM_THREADS='abc'")


def test_without_verbose_no_traceback(tmp_path: Path):
    r = gpulite("inspect", str(write_image(tmp_path / "in.png")))
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_version(capsys):
    from gpulite import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"gpulite {__version__}\n"


def test_verbose_parses_in_either_place():
    p = build_parser()
    assert p.parse_args(["info"]).verbose is False
    assert p.parse_args(["-v", "info"]).verbose is True
    assert p.parse_args(["info", "-v"]).verbose is True
    assert p.parse_args(["graph", "run", "g", "--input", "x", "-v"]).verbose is True
    assert p.parse_args(["-v", "graph", "run", "g", "--input", "x"]).verbose is True
