"""``gpulite run MODEL --input X``: run any ``.tflite`` model on an array or an image.

MODEL is a ``.tflite`` path or a zoo name. ``--input`` is

- an ``.npy`` file: the array for a model with one input;
- an ``.npz`` file: one array per input, keyed by the input's name (all of them, no others);
- an image (.png, .jpg, ...): for a model whose one input is an image tensor ``[1, H, W, 3]``
  (or ``[1, H, W, 1]``: grayscale). The image is read upright (EXIF orientation applied),
  stretched to W x H (bilinear, no letterbox: crop first if the aspect ratio matters), and
  converted to the input's type: float inputs get the pixels mapped from 0..255 to
  ``--range`` (default ``0,1``; MediaPipe's detectors expect ``--range=-1,1``, written with
  ``=`` because of the minus sign), uint8 inputs the raw pixels, int8 inputs the pixels
  minus 128.

An array must have the input's shape (a ``-1`` dimension of the model's signature takes the
array's size) and its type: float arrays are converted to a float input's type and integer
arrays to an integer input's type when every value fits; anything else is an input error
(exit status 2) that says what the input expects. ``run`` prints each output's name, shape,
dtype and min/max/mean/std, and the invoke time (with ``--runs N``: the first invoke apart,
then the median and mean of the others). ``-o out.npz`` writes the outputs keyed by name.

Usage::

    gpulite run face_detection_short_range --input face.png --range=-1,1 -o out.npz
    gpulite run model.tflite --input x.npy --backend webgpu --runs 20
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from gpulite.commands.common import (
    IMAGE_FORMATS,
    CallTimes,
    InputError,
    check_backend,
    check_not_input,
    check_writable,
    read_image,
)
from gpulite.commands.inspect import fmt_shape


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add ``gpulite run``."""
    p = subparsers.add_parser("run", help="run a .tflite model on an .npy/.npz array or an image",
                              description=__doc__.split("Usage::")[0].strip(),
                              formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("model", help="a .tflite path or a zoo name")
    p.add_argument("--input", required=True, metavar="FILE", help="an .npy, an .npz keyed by input name, or an image")
    p.add_argument("--backend", default="auto", choices=("auto", "cpu", "webgpu", "litert"))
    p.add_argument("--range", metavar="LO,HI",
                   help="image into a float input: 0..255 maps to LO..HI (default 0,1; write --range=-1,1 for -1..1)")
    p.add_argument("--runs", type=int, default=1, help="invokes (default 1); the first is timed apart")
    p.add_argument("--threads", type=int, default=None, help="num_threads of the interpreter")
    p.add_argument("-o", "--output", metavar="OUT.npz", help="write the outputs there, keyed by output name")
    p.set_defaults(run=run)


def run(args: argparse.Namespace, out: Callable[[str], None] = print) -> int:
    """``gpulite run``; returns the exit status."""
    from gpulite import zoo
    from gpulite.interpreter import Interpreter

    if args.output is not None and Path(args.output).suffix.lower() != ".npz":
        raise InputError(f"-o {args.output!r}: the outputs are written as .npz (e.g. -o out.npz)")
    if args.output is not None:
        check_writable(args.output, option="-o")
        check_not_input(args.output, args.input, "-o")
    check_backend(args.backend)
    if args.runs < 1:
        raise InputError(f"--runs must be at least 1, got {args.runs}")
    if args.threads is not None and args.threads < -1:  # the Interpreter's num_threads, as LiteRT's
        raise InputError(f"--threads must be -1 (the runtime's default) or at least 0, got {args.threads}")
    lo, hi = parse_range(args.range or "0,1")
    if args.range is not None and Path(args.input).suffix.lower() not in IMAGE_FORMATS:
        raise InputError(f"--range {args.range!r}: it maps an image's pixels; --input {args.input!r} is not an image")
    path = zoo.resolve(args.model)
    it = Interpreter(model_path=path, backend=args.backend,
                     num_threads=args.threads)
    details = it.get_input_details()
    if args.range is not None and np.dtype(details[0]["dtype"]).kind != "f":  # an image feeds one input
        raise InputError(f"--range {args.range!r}: it maps pixels into a float input; {_expects(details[0])}, "
                         "which takes the pixels as they are (uint8) or minus 128 (int8)")
    arrays, how = read_inputs(args.input, details, lo, hi)
    for d, x in zip(details, arrays, strict=True):
        if tuple(x.shape) != tuple(int(s) for s in d["shape"]):
            it.resize_tensor_input(d["index"], list(x.shape))
    it.allocate_tensors()
    for d, x in zip(it.get_input_details(), arrays, strict=True):
        it.set_tensor(d["index"], x)
    times = CallTimes()
    for _ in range(args.runs):
        t0 = time.perf_counter()
        it.invoke()
        times.add((time.perf_counter() - t0) * 1e3)
    outputs = {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}
    out(f"model      {path} ({path.stat().st_size:,} bytes) on backend {it.backend}")
    if it.backend_reason:
        out(f"backend    {it.backend_reason}")
    for d, x, note in zip(details, arrays, how, strict=True):
        out(f"input      {d['name']:<32} {fmt_shape(x.shape):<20} {x.dtype.name:<8} <- {note}")
    for name, y in outputs.items():
        out(f"output     {name:<32} {fmt_shape(y.shape):<20} {y.dtype.name:<8} {stats(y)}")
    out(f"invoke     {times.summary()}")
    if args.output is not None:
        target = Path(args.output)
        target.parent.mkdir(parents=True, exist_ok=True)
        np.savez(target, **outputs)
        out(f"wrote      {target} ({', '.join(outputs)})")
    return 0


def parse_range(text: str) -> tuple[float, float]:
    """``"LO,HI"`` as two floats with LO < HI; InputError otherwise."""
    try:
        lo, hi = (float(v) for v in text.split(","))
    except ValueError:
        raise InputError(f"--range {text!r}: expected two numbers LO,HI such as 0,1 or -1,1") from None
    if not lo < hi:
        raise InputError(f"--range {text!r}: LO must be below HI")
    return lo, hi


def stats(y: np.ndarray) -> str:
    """``min .. max .. mean .. std`` of a numeric array (``empty`` for no elements)."""
    if y.size == 0:
        return "empty"
    if y.dtype.kind == "b":
        return f"{int(y.sum())} of {y.size} true"
    v = y.astype(np.float64)
    return f"min {v.min():.6g}  max {v.max():.6g}  mean {v.mean():.6g}  std {v.std():.6g}"


def read_inputs(spec: str, details: list[dict[str, Any]], lo: float, hi: float
                ) -> tuple[list[np.ndarray], list[str]]:
    """One array per model input from ``spec`` (.npy, .npz or image), checked; and where each came from."""
    p = Path(spec)
    if not p.is_file():
        raise InputError(f"--input {spec!r}: no such file")
    names = [d["name"] for d in details]
    suffix = p.suffix.lower()
    if suffix == ".npy":
        if len(details) != 1:
            raise InputError(f"--input {spec!r}: the model has {len(details)} inputs ({', '.join(names)}); "
                             "give an .npz with one array per input name")
        return [fit(_load_array(p), details[0])], [p.name]
    if suffix == ".npz":
        _check_magic(p, b"PK", "a NumPy .npz file (a zip archive, as numpy.savez writes)")
        try:
            with np.load(p, allow_pickle=False) as z:
                given = {k: z[k] for k in z.files}
        except (OSError, ValueError) as e:
            raise InputError(f"--input {spec!r}: cannot read the .npz file: {e}") from None
        missing, extra = [n for n in names if n not in given], [k for k in given if k not in names]
        if missing or extra:
            raise InputError(f"--input {spec!r}: the .npz must hold exactly the model's inputs {names}; "
                             f"missing {missing}, unknown {extra}")
        return [fit(given[d["name"]], d) for d in details], [f"{p.name}[{d['name']}]" for d in details]
    if suffix in IMAGE_FORMATS:
        if len(details) != 1:
            raise InputError(f"--input {spec!r}: an image feeds a model with one input; this one has "
                             f"{len(details)} ({', '.join(names)}): give an .npz")
        x, note = image_tensor(read_image(p), details[0], lo, hi)
        return [x], [f"{p.name} ({note})"]
    raise InputError(f"--input {spec!r}: expected an .npy, an .npz or an image ({', '.join(IMAGE_FORMATS)})")


def _check_magic(p: Path, magic: bytes, what: str) -> None:
    """InputError unless the file starts with ``magic`` (np.load reads anything else as a pickle and
    says that it holds pickled data)."""
    try:
        with open(p, "rb") as f:
            head = f.read(len(magic))
    except OSError as e:
        raise InputError(f"--input {str(p)!r}: cannot read the {p.suffix} file: {e.strerror}") from None
    if head != magic:
        raise InputError(f"--input {str(p)!r}: cannot read the {p.suffix} file: not {what}; it starts with {head!r}")


def _load_array(p: Path) -> np.ndarray:
    _check_magic(p, b"\x93NUMPY", "a NumPy .npy file (it does not start with b'\\x93NUMPY', as numpy.save writes)")
    try:
        return np.load(p, allow_pickle=False)
    except (OSError, ValueError) as e:
        raise InputError(f"--input {str(p)!r}: cannot read the .npy file: {e}") from None


def _expects(d: dict[str, Any]) -> str:
    sig = d.get("shape_signature", d["shape"])
    return f"input {d['name']!r} expects {fmt_shape(sig)} {np.dtype(d['dtype']).name}"


def fit(x: np.ndarray, d: dict[str, Any]) -> np.ndarray:
    """``x`` in the type of input ``d``, or an InputError saying what the input expects and what came.

    The shape must match (a ``-1`` in the signature takes any size); float arrays convert to a
    float input, integer arrays to an integer input when every value fits.
    """
    sig = [int(s) for s in d.get("shape_signature", d["shape"])]
    if x.ndim != len(sig) or any(s not in (-1, n) for s, n in zip(sig, x.shape, strict=True)):
        raise InputError(f"{_expects(d)}, got shape {fmt_shape(x.shape)}")
    want = np.dtype(d["dtype"])
    if x.dtype == want:
        return x
    if want.kind == "f" and x.dtype.kind == "f":
        return x.astype(want)
    if want.kind in "iu" and x.dtype.kind in "iu":
        info = np.iinfo(want)
        if x.size == 0 or (int(x.min()) >= info.min and int(x.max()) <= info.max):
            return x.astype(want)
        raise InputError(f"{_expects(d)}, got {x.dtype.name} values from {x.min()} to {x.max()}, outside "
                         f"{want.name}'s range")
    raise InputError(f"{_expects(d)}, got dtype {x.dtype.name}")


def image_tensor(rgb: np.ndarray, d: dict[str, Any], lo: float, hi: float) -> tuple[np.ndarray, str]:
    """An RGB image as input ``d``'s tensor ([1, H, W, 3|1]): resized and converted; and how."""
    from PIL import Image

    shape = [int(s) for s in d["shape"]]
    want = np.dtype(d["dtype"])
    if len(shape) != 4 or shape[0] != 1 or shape[3] not in (1, 3) or min(shape[1:3]) < 1:
        raise InputError(f"{_expects(d)}: not an image tensor [1, H, W, 3] (or [1, H, W, 1]); give an .npy")
    if want.kind != "f" and want not in (np.dtype(np.uint8), np.dtype(np.int8)):
        raise InputError(f"{_expects(d)}: an image feeds float32, uint8 or int8 inputs only; give an .npy")
    h, w, c = shape[1:]
    pil = Image.fromarray(rgb).resize((w, h), Image.BILINEAR)
    pixels = np.asarray(pil.convert("L"))[..., None] if c == 1 else np.asarray(pil)
    note = f"{rgb.shape[1]}x{rgb.shape[0]} resized to {w}x{h}"
    if want.kind == "f":
        x = (lo + (hi - lo) * pixels.astype(np.float64) / 255.0).astype(want)
        note += f", 0..255 -> {lo:g}..{hi:g}"
    elif want == np.uint8:
        x = pixels
    else:
        x = (pixels.astype(np.int16) - 128).astype(np.int8)
        note += ", pixels - 128"
    return x[None], note
