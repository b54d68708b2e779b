"""What a user's install gets: the built wheel, its data files and metadata, its dependency bounds.

The slow test builds the wheel as ``pip install .`` does (build isolation, from a copy of the
checkout), installs it into a fresh venv -- dependencies from the package index, as a user's
install gets them -- and runs a model there, asserting the compiled CPU loops ran. Another does
the same with each other Python version the classifiers name, where the zoo also downloads a
model into an empty cache, and compares that model's output with this interpreter's.
"""

from __future__ import annotations

import email
import glob
import os
import re
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment without PYTHONPATH and GPULITE_* variables, so the installed package is the one imported."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("GPULITE_")}
    env.update(extra)
    return env


def _requirement_bounds(req: str) -> tuple[str, str | None, str | None]:
    """``name``, lower and upper bound of a ``name>=a,<b`` or ``name==a`` requirement."""
    m = re.fullmatch(r"([A-Za-z0-9_.-]+)(.*)", req.replace(" ", ""))
    assert m, req
    name, spec = m.groups()
    pins = dict(re.findall(r"(==|>=|<)([^,]+)", spec))
    if "==" in pins:
        return name, pins["=="], pins["=="]
    return name, pins.get(">="), pins.get("<")


def _key(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v))


REQUIREMENTS = [*PYPROJECT["project"]["dependencies"], *PYPROJECT["project"]["optional-dependencies"]["test"]]


@pytest.mark.parametrize("req", REQUIREMENTS)
def test_every_dependency_is_bounded_and_the_installed_version_is_inside(req):
    """Lower and upper bound on every runtime and test dependency (``==`` for the oracles);
    the version this suite runs with is inside them, so the bounds are tested ones."""
    name, lo, hi = _requirement_bounds(req)
    assert lo and hi, f"{req}: needs a lower and an upper bound"
    try:
        have = version(name)
    except PackageNotFoundError:
        pytest.fail(f"{name} ({req}) is not installed: pip install -e '.[test]'")
    if lo == hi:
        assert have == lo, f"{name} {have} installed, {req} required"
    else:
        assert _key(lo) <= _key(have) < _key(hi), f"{name} {have} installed, outside {req}"


def test_wgpu_lower_bound_is_the_first_release_that_works():
    """wgpu 0.19-0.31 fail at the first GPU invoke (a uniform buffer binding size error)."""
    (req,) = [r for r in REQUIREMENTS if r.startswith("wgpu")]
    assert _requirement_bounds(req)[1:] == ("0.32.0", "0.33")


def test_info_says_numpy_only_when_the_loops_cannot_be_built(tmp_path):
    env = _clean_env(GPULITE_CC=str(tmp_path / "no-such-cc"), GPULITE_CACHE_DIR=str(tmp_path), PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-m", "gpulite.cli", "info"], capture_output=True, text=True, timeout=300,
                       cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^cpu loops\s+numpy only: compiled loops unavailable \(.*no-such-cc", r.stdout, re.M), r.stdout


def _package_files(root: Path) -> set[str]:
    """The files under gpulite/ that are not Python, as wheel paths."""
    return {p.relative_to(root).as_posix() for p in (root / "gpulite").rglob("*")
            if p.is_file() and p.suffix not in (".py", ".pyc") and "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel ``pip install .`` builds, from a copy of the checkout (no build/ left in it)."""
    tmp = tmp_path_factory.mktemp("wheel")
    src = tmp / "src"
    shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(".git", ".venv", "venv", "build", "dist", "*.egg-info",
                                                             "__pycache__", ".pytest_cache"))
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp / "dist"), str(src)],
                       capture_output=True, text=True, timeout=600, env=_clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    (whl,) = (tmp / "dist").glob("gpulite-*.whl")
    return whl


@pytest.mark.slow
def test_wheel_has_every_data_file_license_and_metadata(wheel):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta = email.message_from_bytes(zf.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
    missing = _package_files(ROOT) - names
    assert not missing, f"files under gpulite/ left out of the wheel: {sorted(missing)}"
    assert "gpulite/backends/cpu/loops.c" in names and "gpulite/backends/webgpu/encode.c" in names
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), sorted(names)
    assert meta["License-Expression"] == "Apache-2.0"
    assert meta["Requires-Python"] == PYPROJECT["project"]["requires-python"]
    wgpu = [d for d in meta.get_all("Requires-Dist") if d.startswith("wgpu")]
    assert len(wgpu) == 1 and ">=0.32.0" in wgpu[0] and "<0.33" in wgpu[0], wgpu


RUN_A_MODEL = """
import numpy as np, gpulite
from gpulite.backends.cpu import jit
it = gpulite.Interpreter(model_path="face_detection_short_range", backend="cpu")
it.allocate_tensors()
d = it.get_input_details()[0]
it.set_tensor(d["index"], np.zeros(d["shape"], np.float32))
it.invoke()
print("FILE", gpulite.__file__)
print("LOOPS", jit.available())
"""


@pytest.mark.slow
def test_wheel_installs_into_a_fresh_venv_and_runs_with_the_compiled_loops(wheel, tmp_path):
    env_dir = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=600, env=_clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    env = _clean_env(GPULITE_CACHE_DIR=str(tmp_path / "cache"))  # the loops are built afresh
    r = subprocess.run([str(py), "-c", RUN_A_MODEL], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                       env=env)
    assert r.returncode == 0, r.stderr
    assert f"FILE {env_dir}" in r.stdout, r.stdout  # the installed copy, not the checkout
    assert "LOOPS True" in r.stdout and "unavailable" not in r.stderr, r.stdout + r.stderr
    assert list((tmp_path / "cache" / "cpu-loops").glob("loops-*.so"))
    r = subprocess.run([str(env_dir / "bin" / "gpulite"), "info"], capture_output=True, text=True, timeout=300,
                       cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    assert re.search(r"^cpu loops\s+compiled loops active", r.stdout, re.M), r.stdout


def _other_minors() -> list[str]:
    """The ``3.x`` versions the classifiers name, except the running one (the test above covers it)."""
    minors = [c.rsplit(" :: ", 1)[1] for c in PYPROJECT["project"]["classifiers"]
              if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)]
    return [m for m in minors if m != f"{sys.version_info.major}.{sys.version_info.minor}"]


def _interpreter(minor: str) -> tuple[str | None, list[str]]:
    """A working ``python<minor>`` with venv and ensurepip, from pyenv's versions folder (newest patch
    first; pyenv's shims fail for versions that are not selected) or PATH; else None and what was tried."""
    root = os.environ.get("PYENV_ROOT") or str(Path.home() / ".pyenv")
    found = sorted(glob.glob(f"{root}/versions/{minor}.*/bin/python{minor}"), key=_key, reverse=True)
    candidates = [*found, *filter(None, [shutil.which(f"python{minor}")])]
    for c in candidates:
        r = subprocess.run([c, "-c", "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"],
                           capture_output=True, text=True, timeout=60, env=_clean_env())
        if r.returncode == 0 and r.stdout.strip() == minor:
            return c, candidates
    return None, candidates


ZOO_MODEL = "face_landmark"  # not embedded in the package: the zoo downloads it
RUN_FROM_THE_ZOO = f"""
import sys, numpy as np, gpulite
from gpulite import zoo
from gpulite.backends.cpu import jit
path = zoo.resolve({ZOO_MODEL!r})
it = gpulite.Interpreter(model_path={ZOO_MODEL!r}, backend="cpu")
it.allocate_tensors()
it.set_tensor(it.get_input_details()[0]["index"], np.load(sys.argv[1]))
it.invoke()
np.savez(sys.argv[2], *[it.get_tensor(d["index"]) for d in it.get_output_details()])
print("PYTHON %d.%d" % sys.version_info[:2])
print("FILE", gpulite.__file__)
print("MODEL", path)
print("LOOPS", jit.available())
"""


def _run_here(x: np.ndarray) -> list[np.ndarray]:
    import gpulite

    it = gpulite.Interpreter(model_path=ZOO_MODEL, backend="cpu")
    it.allocate_tensors()
    it.set_tensor(it.get_input_details()[0]["index"], x)
    it.invoke()
    return [it.get_tensor(d["index"]) for d in it.get_output_details()]


@pytest.mark.slow
@pytest.mark.parametrize("minor", _other_minors())
def test_wheel_works_on_every_python_the_classifiers_name(wheel, tmp_path, minor):
    """The wheel in a fresh venv of another supported Python (runtime dependencies from the package
    index, through pip's cache): the zoo downloads a model into an empty cache (the mediapipe wheel it
    comes from has no build for every Python), which runs with the compiled loops and gives the output
    this interpreter gives on the same input."""
    python, tried = _interpreter(minor)
    if python is None:
        pytest.skip(f"no working python{minor} with venv (tried {tried or 'nothing: none in pyenv or on PATH'})")
    env_dir = tmp_path / "venv"
    r = subprocess.run([python, "-m", "venv", str(env_dir)], capture_output=True, text=True, timeout=300,
                       env=_clean_env())
    assert r.returncode == 0, r.stdout + r.stderr
    py = env_dir / "bin" / "python"
    r = subprocess.run([str(py), "-m", "pip", "install", "--disable-pip-version-check", "-q", str(wheel)],
                       capture_output=True, text=True, timeout=600, env=_clean_env())
    assert r.returncode == 0, f"the wheel's dependencies on Python {minor}:\n{r.stdout}{r.stderr}"

    x = np.random.default_rng(11).uniform(-1, 1, (1, 192, 192, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", x)
    cache = tmp_path / "cache"
    r = subprocess.run([str(py), "-c", RUN_FROM_THE_ZOO, str(tmp_path / "x.npy"), str(tmp_path / "y.npz")],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path,
                       env=_clean_env(GPULITE_CACHE_DIR=str(cache)))
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"PYTHON {minor}" in r.stdout and f"FILE {env_dir}" in r.stdout, r.stdout
    assert f"MODEL {cache / 'models' / ZOO_MODEL}.tflite" in r.stdout, r.stdout  # downloaded into the empty cache
    assert "LOOPS True" in r.stdout and "unavailable" not in r.stderr, r.stdout + r.stderr

    with np.load(tmp_path / "y.npz") as got:
        theirs = [got[f"arr_{i}"] for i in range(len(got.files))]
    ours = _run_here(x)  # same numpy kernels and loops; the venv may get a newer numpy (and OpenBLAS): 1e-5
    assert len(theirs) == len(ours)
    for i, (a, b) in enumerate(zip(theirs, ours, strict=True)):
        assert a.shape == b.shape and a.dtype == b.dtype, (i, a.shape, a.dtype, b.shape, b.dtype)
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-5, err_msg=f"output {i}, Python {minor} vs {sys.version}")
