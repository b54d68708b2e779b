"""WGSL sources: ``//#include`` expansion in ``make_program`` and what reaches the pipeline cache."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from gpulite.backends.webgpu import program
from gpulite.backends.webgpu.program import KernelError, make_program


@pytest.fixture
def wgsl_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty WGSL folder (but for the common header) in place of ``wgsl/``."""
    shutil.copy(program.WGSL_DIR / "common.wgsl", tmp_path)
    monkeypatch.setattr(program, "WGSL_DIR", tmp_path)
    program._sources.cache_clear()
    yield tmp_path
    program._sources.cache_clear()


def _write(folder: Path, **files: str) -> None:
    for stem, text in files.items():
        (folder / f"{stem}.wgsl").write_text(text)


def test_include_is_expanded_once_per_program(wgsl_dir):
    _write(wgsl_dir, base="fn base() -> u32 { return 1u; }\n",
           mid='//#include "base.wgsl"\nfn mid() -> u32 { return base() + $K; }\n',
           k='//#include "mid.wgsl"\n//#include "base.wgsl"\nfn run(i: u32) { buf[i] = f32(mid()); }\n')
    p = make_program("k", "k", [], 4, K="2u")
    assert p.wgsl.count("fn base()") == 1 and p.wgsl.count("fn mid()") == 1
    assert "//#include" not in p.wgsl
    assert "return base() + 2u;" in p.wgsl  # included text takes the program's substitutions
    # A second source that includes the same file does not define it again.
    _write(wgsl_dir, k2='//#include "base.wgsl"\nfn other() -> u32 { return base(); }\n')
    assert make_program("k", ("k", "k2"), [], 4, K="2u").wgsl.count("fn base()") == 1


def test_missing_include_names_the_file_and_the_includer(wgsl_dir):
    _write(wgsl_dir, k='//#include "nowhere.wgsl"\nfn run(i: u32) {}\n')
    with pytest.raises(KernelError, match=r"k\.wgsl: //#include \"nowhere\.wgsl\": no WGSL file 'nowhere\.wgsl'"):
        make_program("k", "k", [], 1)


@pytest.mark.parametrize("line", ['//#include nhwc.wgsl', '//#include "../common.wgsl"', '//#include "a.txt"'])
def test_malformed_include_is_refused(wgsl_dir, line):
    _write(wgsl_dir, k=f"{line}\nfn run(i: u32) {{}}\n")
    with pytest.raises(KernelError, match="malformed include"):
        make_program("k", "k", [], 1)


def test_missing_kernel_source(wgsl_dir):
    with pytest.raises(KernelError, match=r"kernel source: no WGSL file 'absent\.wgsl'"):
        make_program("k", "absent", [], 1)


def test_window_kernels_share_one_prologue():
    """The shared helpers are defined once in every window kernel, and programs that differ
    only in what an include does not see (a template option) still get different keys."""
    params = [(f, "u32", 1) for f in ("in_h", "in_w", "c", "out_h", "out_w", "k_h", "k_w", "stride_h", "stride_w")]
    params += [("pad_top", "i32", 0), ("pad_left", "i32", 0), ("x_off", "u32", 0), ("out_off", "u32", 0)]
    mx = make_program("max", "pool2d", params, 1, INIT="-3.4e38", REDUCE="max(acc, v)", FINISH="acc")
    avg = make_program("avg", "pool2d", params, 1, INIT="0.0", REDUCE="acc + v", FINISH="acc / max(count, 1.0)")
    for p in (mx, avg):
        assert p.wgsl.count("fn coords4(") == 1 and p.wgsl.count("fn window(") == 1
    assert mx.key != avg.key and mx.wgsl != avg.wgsl
