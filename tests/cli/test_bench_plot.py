"""``gpulite bench --plot``: one run times gpulite-cpu, gpulite-webgpu and LiteRT and draws the chart."""

from __future__ import annotations

import builtins

import numpy as np
import pytest

from gpulite.cli import main
from gpulite.commands import bench_plot
from tests.webgpu.support import adapter_problem


def test_bench_plot_measures_every_backend_and_writes_a_png(tmp_path, capsys):
    why = adapter_problem()
    if why is not None:
        pytest.skip(why)
    pytest.importorskip("matplotlib")
    out = tmp_path / "latency.png"
    assert main(["bench", "face_detection_short_range", "--runs", "2", "--threads", "1", "--plot", str(out)]) == 0
    text = capsys.readouterr().out
    header = next(line for line in text.splitlines() if line.startswith("model"))
    assert header.split() == ["model", "gpulite-cpu", "gpulite-webgpu", "LiteRT"]
    row = next(line for line in text.splitlines() if line.startswith("face_detection_short_range"))
    assert row.count("x)") == 2 and "-" not in row.split()[1:], row       # three numbers, two ratios
    from PIL import Image
    img = np.asarray(Image.open(out).convert("RGB"))
    assert img.shape[0] > 400 and img.shape[1] > 800
    for color in bench_plot.COLORS.values():                              # one bar of each backend
        rgb = np.array([int(color[i:i + 2], 16) for i in (1, 3, 5)])
        assert (np.abs(img.astype(int) - rgb).sum(axis=2) < 10).sum() > 200, color


def test_bench_plot_without_matplotlib_says_how_to_get_it(monkeypatch, tmp_path, capsys):
    real_import = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name == "matplotlib" or name.startswith("matplotlib."):
            raise ImportError("No module named 'matplotlib'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(bench_plot.PlotUnavailableError, match="pip install matplotlib"):
        bench_plot.bench_plot(["face_detection_short_range"], tmp_path / "x.png", runs=1, threads=1)
    assert not (tmp_path / "x.png").exists()
    status = main(["bench", "face_detection_short_range", "--runs", "1", "--plot", str(tmp_path / "x.png")])
    assert status == 2, "a missing optional package is an input error, as `gpulite batch` without Ray"
    err = capsys.readouterr().err.strip()
    assert err == "gpulite: error: gpulite bench --plot needs matplotlib: pip install matplotlib"
