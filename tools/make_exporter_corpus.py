"""Write the exporter-made model corpus of ``tests/data/corpus_exporters/`` (issue 23), and check it in LiteRT.

A developer tool, never a test or runtime dependency. Three steps, three virtual environments::

    /work/venvs/litert-torch/bin/python tools/make_exporter_corpus.py torch [OUT_DIR [NAME...]]
    /work/venvs/onnx2tf/bin/python tools/make_exporter_corpus.py onnx [OUT_DIR [NAME...]]
    /work/main/.venv/bin/python tools/make_exporter_corpus.py check [OUT_DIR]   # ai_edge_litert, no exporter

The venvs: ``python3.11 -m venv /work/venvs/litert-torch && /work/venvs/litert-torch/bin/pip install
-r tools/requirements-litert-torch.txt`` (Python 3.11: the torch wheels at hand; litert-torch takes
>= 3.10) and ``python3.12 -m venv /work/venvs/onnx2tf && ... -r tools/requirements-onnx2tf.txt``
(onnx2tf 2.x needs Python >= 3.12). They cannot be one: onnx2tf pins ai-edge-litert 2.1.2,
litert-torch needs >= 2.3.

``torch`` builds small PyTorch modules with random weights (``torch.manual_seed(SEED)`` before
each), converts each with ``litert_torch.convert`` in the variants ``TORCH_VARIANTS`` (files
``torch_<model>_<variant>.tflite``) and writes the ONNX models (``torch.onnx.export``, opset
``OPSET``, the TorchScript exporter) of ``ONNX_MODELS`` to ``OUT_DIR/onnx_src/``. ``onnx``
converts those with onnx2tf (``onnx_<model>_<variant>.tflite``) and removes ``onnx_src``.
Both write ``SHA256SUMS`` and ``SKIPPED`` (what an exporter refused, with its message).
``prune`` (in the ``check`` environment) deletes the files LiteRT cannot run (onnx2tf writes a few),
listing them in ``SKIPPED`` with LiteRT's error.

litert-torch variants (its README's recipes):

- ``float32``: ``litert_torch.convert(model, args)``;
- ``fp16``: ai-edge-quantizer's float16 weights (``quant_recipes.full_fp16_recipe()``);
- ``dynint8``: int8 weights, dynamic-range activations (``full_dynamic_recipe()``);
- ``pt2e_int8``: PT2E static int8, per-channel, calibrated on 8 seeded uniform [-1, 1] samples.

onnx2tf variants (``onnx2tf -i m.onnx -o DIR -tb BACKEND -oiqt -qt per-channel``, calibration on
the same seeded samples, ``-cind``): ``float32``, ``float16`` from its default
``flatbuffer_direct`` backend; ``dynrange`` (dynamic_range_quant), ``int8`` (integer_quant: float
I/O), ``int8io`` (full_integer_quant: int8 I/O), ``a16w8`` (integer_quant_with_int16_act) from
``-tb tf_converter`` (TensorFlow's converter: the default backend refuses to quantize a PADV2 or
a GRU). onnx2tf writes NHWC inputs for 4-D image inputs (its default transposition).
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SEED = 23
OPSET = 17
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus_exporters"
TORCH_VARIANTS = ("float32", "fp16", "dynint8", "pt2e_int8")
# variant -> (onnx2tf's file suffix, its TFLite backend)
ONNX_VARIANTS = {"float32": ("float32", "flatbuffer_direct"), "float16": ("float16", "flatbuffer_direct"),
                 "dynrange": ("dynamic_range_quant", "tf_converter"), "int8": ("integer_quant", "tf_converter"),
                 "int8io": ("full_integer_quant", "tf_converter"),
                 "a16w8": ("integer_quant_with_int16_act", "tf_converter")}
ONNX_MODELS = ("resnet18", "decoder", "tensor_ops", "gru")
CALIBRATION = 8


# ----------------------------------------------------------------------------- models (PyTorch)

def _models():
    import torch
    import torchvision
    from torch import nn
    from torch.nn import functional as F  # noqa: N812 (PyTorch's own spelling)
    from torchvision.models.resnet import BasicBlock

    def mobilenet_v3_small():
        """torchvision's MobileNetV3-Small at width 0.25 (hard-swish, squeeze-excite), a 64-wide top."""
        settings, _ = torchvision.models.mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
        return torchvision.models.MobileNetV3(settings[:6], last_channel=64, num_classes=10), (1, 3, 64, 64)

    class ResNet18(nn.Module):
        """torchvision's ResNet-18 layout (BasicBlocks [2, 2, 2, 2], 7x7 stem, max pool) at widths 8-24."""

        def __init__(self, widths=(8, 12, 16, 24), classes=10):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, widths[0], 7, 2, 3, bias=False), nn.BatchNorm2d(widths[0]),
                                      nn.ReLU(inplace=True), nn.MaxPool2d(3, 2, 1))
            layers, cin = [], widths[0]
            for i, w in enumerate(widths):
                stride = 1 if i == 0 else 2
                down = None
                if stride != 1 or cin != w:
                    down = nn.Sequential(nn.Conv2d(cin, w, 1, stride, bias=False), nn.BatchNorm2d(w))
                layers += [BasicBlock(cin, w, stride, down), BasicBlock(w, w)]
                cin = w
            self.layers = nn.Sequential(*layers)
            self.fc = nn.Linear(cin, classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))

    class ResNeXt(nn.Module):
        """ResNeXt bottlenecks (grouped 3x3 convs, 4 and 8 groups) and a ShuffleNet-v1 channel shuffle."""

        def __init__(self):
            super().__init__()
            self.stem = nn.Sequential(nn.Conv2d(3, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
            self.b1 = self._block(16, 32, 4, 1)
            self.b2 = self._block(32, 32, 8, 2)
            self.gconv = nn.Conv2d(32, 32, 1, groups=4)
            self.fc = nn.Linear(32, 6)

        @staticmethod
        def _block(cin, cout, groups, stride):
            return nn.Sequential(nn.Conv2d(cin, cout, 1), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 3, stride, 1, groups=groups), nn.BatchNorm2d(cout), nn.ReLU(),
                                 nn.Conv2d(cout, cout, 1))

        def forward(self, x):
            x = self.stem(x)
            x = F.relu(self.b1(x) + torch.cat([x, x], 1))
            x = self.b2(x)
            b, c, h, w = x.shape  # channel shuffle, 4 groups
            x = x.reshape(b, 4, c // 4, h, w).transpose(1, 2).reshape(b, c, h, w)
            x = F.relu(self.gconv(x))
            return self.fc(x.mean((2, 3)))

    def shufflenet_v2():
        """torchvision's ShuffleNetV2 at stage widths 8-64 (channel split, shuffle, depthwise)."""
        return torchvision.models.ShuffleNetV2([2, 2, 2], [8, 16, 32, 48, 64], num_classes=10), (1, 3, 48, 48)

    def lraspp():
        """torchvision's LR-ASPP segmentation head (32 wide) on a width-0.25 dilated MobileNetV3-Small
        without its last two blocks (as torchvision's lraspp_mobilenet_v3_large builds it)."""
        from torchvision.models._utils import IntermediateLayerGetter
        from torchvision.models.segmentation.lraspp import LRASPP

        features = torchvision.models.mobilenet_v3_small(width_mult=0.25, dilated=True).features[:-3]
        stages = [0] + [i for i, b in enumerate(features) if getattr(b, "_is_cn", False)] + [len(features) - 1]
        low, high = stages[-3], stages[-1]
        backbone = IntermediateLayerGetter(features, {str(low): "low", str(high): "high"})
        return LRASPP(backbone, features[low].out_channels, features[high].out_channels, 3, 32), (1, 3, 64, 64)

    class Seg(nn.Module):  # LRASPP returns a dict
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x)["out"]

    def vit():
        """torchvision's VisionTransformer: 2 layers, 2 heads, 32 wide, 8x8 patches of 32x32."""
        return torchvision.models.VisionTransformer(32, 8, 2, 2, 32, 64, num_classes=10), (1, 3, 32, 32)

    class Decoder(nn.Module):
        """A latent -> image decoder: ConvTranspose2d (padded, and kernel = stride), nearest and
        bilinear upsampling, pixel shuffle, sigmoid. (litert-torch 0.10 refuses a ConvTranspose2d
        with output_padding: "ValueError: ... lhs_dilation ...", so there is none.)"""

        def __init__(self):
            super().__init__()
            self.t1 = nn.ConvTranspose2d(16, 12, 4, 2, 1)
            self.c1 = nn.Conv2d(12, 12, 3, padding=1)
            self.c2 = nn.Conv2d(12, 16, 3, padding=1)
            self.t2 = nn.ConvTranspose2d(4, 4, 2, 2)
            self.out = nn.Conv2d(4, 3, 1)

        def forward(self, z):
            x = F.relu(self.t1(z))                                        # 4 -> 8
            x = F.interpolate(x, scale_factor=2, mode="nearest")          # 16
            x = F.leaky_relu(self.c1(x), 0.1)
            x = F.interpolate(x, size=(24, 24), mode="bilinear", align_corners=False)
            x = F.pixel_shuffle(self.c2(x), 2)                            # 16 ch -> 4 ch, 48
            x = F.elu(self.t2(F.avg_pool2d(x, 2)))                        # 24 -> 48
            return torch.sigmoid(self.out(x))

    class TensorOps(nn.Module):
        """where, gather, cumsum, topk, einsum, layer norm, softmax on a [1, 8, 16] sequence."""

        def __init__(self):
            super().__init__()
            self.norm = nn.LayerNorm(16)
            self.w = nn.Parameter(torch.randn(16, 12) * 0.3)
            self.head = nn.Linear(12, 4)

        def forward(self, x):
            y = torch.einsum("bsd,de->bse", self.norm(x), self.w)
            y = torch.cumsum(y, dim=1)
            score = y.mean(-1)                                             # [1, 8]
            _, idx = torch.topk(score, 4, dim=1)                           # 4 best positions
            picked = torch.gather(y, 1, idx.unsqueeze(-1).expand(-1, -1, y.shape[-1]))
            picked = torch.where(picked > 0, picked, 0.2 * picked)
            att = torch.softmax(torch.einsum("bqe,bke->bqk", picked, y) / 4.0, -1)
            return self.head(torch.einsum("bqk,bke->bqe", att, y)).sum(1)

    class Lstm(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.LSTM(12, 16, num_layers=2, batch_first=True)
            self.fc = nn.Linear(16, 4)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y[:, -1])

    class Gru(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(12, 16, batch_first=True, bidirectional=True)
            self.fc = nn.Linear(32, 4)

        def forward(self, x):
            y, _ = self.rnn(x)
            return self.fc(y[:, -1])

    class TwoInTwoOut(nn.Module):
        """An image and a feature vector in; class logits and a mask out."""

        def __init__(self):
            super().__init__()
            self.conv = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1), nn.Hardswish(), nn.Conv2d(8, 16, 3, 2, 1), nn.GELU())
            self.film = nn.Linear(6, 16)
            self.fc = nn.Linear(16, 5)
            self.mask = nn.Conv2d(16, 1, 1)

        def forward(self, image, features):
            x = self.conv(image) * torch.tanh(self.film(features))[:, :, None, None]
            logits = self.fc(x.amax((2, 3)))
            mask = F.interpolate(torch.sigmoid(self.mask(x)), scale_factor=4, mode="bilinear", align_corners=True)
            return logits, mask

    return {
        "mobilenet_v3_small": mobilenet_v3_small,
        "resnet18": lambda: (ResNet18(), (1, 3, 64, 64)),
        "resnext": lambda: (ResNeXt(), (1, 3, 32, 32)),
        "shufflenet_v2": shufflenet_v2,
        "lraspp": lambda: (lambda m, s: (Seg(m), s))(*lraspp()),
        "vit": vit,
        "decoder": lambda: (Decoder(), (1, 16, 4, 4)),
        "tensor_ops": lambda: (TensorOps(), (1, 8, 16)),
        "lstm": lambda: (Lstm(), (1, 10, 12)),
        "gru": lambda: (Gru(), (1, 10, 12)),
        "two_in_two_out": lambda: (TwoInTwoOut(), ((1, 3, 32, 32), (1, 6))),
    }


def sample(shapes, seed):
    """Seeded uniform [-1, 1] float32 inputs (numpy), one per input shape: what the tests feed."""
    import numpy as np

    rng = np.random.default_rng(seed)
    return [rng.uniform(-1.0, 1.0, s).astype(np.float32) for s in shapes]


def _shapes(spec):
    return list(spec) if isinstance(spec[0], tuple) else [spec]


def _build(name):
    import torch

    torch.manual_seed(SEED)
    model, spec = _models()[name]()
    model.eval()
    with torch.no_grad():  # give BatchNorm's running statistics non-trivial values
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.2, 0.2)
                m.running_var.uniform_(0.5, 1.5)
    return model, _shapes(spec)


def _torch_variant(model, args, variant, calib):
    import litert_torch
    import torch
    from litert_torch.generative.quantize import quant_recipes
    from litert_torch.quantize import pt2e_quantizer as pq
    from litert_torch.quantize import quant_config as qc
    from torchao.quantization.pt2e import quantize_pt2e

    if variant == "float32":
        return litert_torch.convert(model, args)
    if variant in ("fp16", "dynint8"):
        recipe = {"fp16": quant_recipes.full_fp16_recipe, "dynint8": quant_recipes.full_dynamic_recipe}[variant]()
        return litert_torch.convert(model, args, quant_config=recipe)
    quantizer = pq.PT2EQuantizer().set_global(
        pq.get_symmetric_quantization_config(is_per_channel=True, is_dynamic=False))
    m = quantize_pt2e.prepare_pt2e(torch.export.export(model, args).module(), quantizer)
    for xs in calib:
        m(*xs)
    m = quantize_pt2e.convert_pt2e(m, fold_quantize=False)
    return litert_torch.convert(m, args, quant_config=qc.QuantConfig(pt2e_quantizer=quantizer))


def build_torch(out: Path, names=()) -> None:
    import litert_torch
    import torch

    out.mkdir(parents=True, exist_ok=True)
    src = out / "onnx_src"
    src.mkdir(exist_ok=True)
    skipped = []
    for name in names or _models():
        model, shapes = _build(name)
        args = tuple(torch.from_numpy(x) for x in sample(shapes, 0))
        calib = [tuple(torch.from_numpy(x) for x in sample(shapes, 1000 + s)) for s in range(CALIBRATION)]
        for variant in TORCH_VARIANTS:
            path = out / f"torch_{name}_{variant}.tflite"
            try:
                _torch_variant(model, args, variant, calib).export(str(path))
                print(f"{path.name}: {path.stat().st_size} bytes", flush=True)
            except Exception as e:  # the exporter refuses: recorded as a skip
                skipped.append((f"torch_{name}_{variant}", _why(e)))
                print(f"SKIP {path.stem}: {skipped[-1][1]}", flush=True)
        if name in ONNX_MODELS:
            export_onnx(src, name, model, args, calib)
    _write_skips(out, "torch_", names or _models(), TORCH_VARIANTS, skipped)
    write_sums(out)
    print("torch", torch.__version__, "litert-torch", litert_torch.__version__)


def export_onnx(src: Path, name: str, model, args, calib) -> None:
    """``src/<name>.onnx`` (inputs ``input_<i>``) and its calibration inputs, ``src/<name>_calib_<i>.npy``."""
    import numpy as np
    import torch

    names_in = [f"input_{i}" for i in range(len(args))]
    torch.onnx.export(model, args, str(src / f"{name}.onnx"), opset_version=OPSET, dynamo=False, input_names=names_in)
    for i in range(len(args)):  # onnx2tf's -cind reads [N, ...] arrays
        np.save(src / f"{name}_calib_{i}.npy", np.concatenate([xs[i].numpy() for xs in calib]))


def _why(e: Exception) -> str:
    lines = [line for line in str(e).strip().splitlines() if line.strip()] or [type(e).__name__]
    return f"{type(e).__name__}: " + next((line for line in lines if "error" in line.lower()), lines[-1])[-200:]


def _write_skips(out: Path, prefix: str, names, variants, skipped) -> None:
    built = {f"{prefix}{n}_{v}" for n in names for v in variants}
    old = (out / "SKIPPED").read_text().splitlines(keepends=True) if (out / "SKIPPED").exists() else []
    kept = [line for line in old if line.split(":", 1)[0] not in built]
    (out / "SKIPPED").write_text("".join(sorted(kept + [f"{n}: {w}\n" for n, w in skipped])))


def write_sums(out: Path) -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(out.glob("*.tflite"))]
    (out / "SHA256SUMS").write_text("".join(lines))


# ----------------------------------------------------------------------------- onnx2tf

def build_onnx(out: Path, names=()) -> None:
    import numpy as np
    import onnx2tf

    src = out / "onnx_src"
    skipped = []
    for name in names or ONNX_MODELS:
        onnx_path = src / f"{name}.onnx"
        calib = sorted(src.glob(f"{name}_calib_*.npy"))
        cind = []
        for i, c in enumerate(calib):
            x = np.load(c)
            if x.ndim == 4:  # onnx2tf calibrates NHWC image inputs
                np.save(c, x.transpose(0, 2, 3, 1))
            cind += ["-cind", f"input_{i}", str(c), "[0.0]", "[1.0]"]
        for backend in ("flatbuffer_direct", "tf_converter"):
            with tempfile.TemporaryDirectory() as tmp:
                cmd = [sys.executable, "-m", "onnx2tf", "-i", str(onnx_path), "-o", tmp, "-tb", backend, "-oiqt",
                       "-qt", "per-channel", "-n", *cind]
                r = subprocess.run(cmd, capture_output=True, text=True)
                for variant, (suffix, made_by) in ONNX_VARIANTS.items():
                    if made_by != backend:
                        continue
                    made = Path(tmp) / f"{name}_{suffix}.tflite"
                    path = out / f"onnx_{name}_{variant}.tflite"
                    if made.exists():
                        shutil.copyfile(made, path)
                        print(f"{path.name}: {path.stat().st_size} bytes", flush=True)
                    else:
                        log = (r.stderr + r.stdout).strip().splitlines()
                        why = next((line for line in log if "Error:" in line), None)
                        why = why or f"wrote no {suffix} file (no error; last line: {log[-1] if log else ''})"
                        skipped.append((path.stem, f"onnx2tf ({backend}): {why.strip()[-200:]}"))
                        print(f"SKIP {path.stem}: {skipped[-1][1]}", flush=True)
    _write_skips(out, "onnx_", names or ONNX_MODELS, ONNX_VARIANTS, skipped)
    shutil.rmtree(src)
    write_sums(out)
    print("onnx2tf", onnx2tf.__version__)


# ----------------------------------------------------------------------------- check (LiteRT)

def check(out: Path, prune: bool = False) -> int:
    """Run every file in LiteRT on seeded inputs; print ops, sizes and failures; return #failures.
    ``prune``: delete the files LiteRT cannot run (exporter bugs), listing them in ``SKIPPED``."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    bad = total = 0
    for path in sorted(out.glob("*.tflite")):
        total += path.stat().st_size
        try:
            # LiteRT's own kernels: with XNNPACK the op list would say DELEGATE
            it = Interpreter(model_path=str(path),
                             experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
            it.allocate_tensors()
            ds = it.get_input_details()
            for d, x in zip(ds, sample([tuple(d["shape"]) for d in ds], 0), strict=True):
                if d["dtype"] == np.int8:
                    scale, zero = d["quantization"]
                    x = np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)
                it.set_tensor(d["index"], x)
            it.invoke()
            shapes = [tuple(it.get_tensor(o["index"]).shape) for o in it.get_output_details()]
            ops = sorted({o["op_name"] for o in it._get_ops_details()})
            print(f"ok   {path.name}: in {[tuple(map(int, d['shape'])) for d in ds]} out {shapes}, ops {ops}")
        except Exception as e:
            bad += 1
            print(f"FAIL {path.name}: {type(e).__name__}: {e}")
            if prune:
                why = " ".join(str(e).split())[-200:]
                with open(out / "SKIPPED", "a") as f:
                    f.write(f"{path.stem}: written, but LiteRT cannot run it: {type(e).__name__}: {why}\n")
                path.unlink()
    if prune:
        (out / "SKIPPED").write_text("".join(sorted((out / "SKIPPED").read_text().splitlines(keepends=True))))
        write_sums(out)
    print(f"{total} bytes in all")
    return bad


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "check"
    where = Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    if cmd == "torch":
        build_torch(where, sys.argv[3:])
    elif cmd == "onnx":
        build_onnx(where, sys.argv[3:])
    elif cmd in ("check", "prune"):
        sys.exit(1 if check(where, prune=cmd == "prune") else 0)
    else:
        sys.exit(f"usage: {sys.argv[0]} torch|onnx|check|prune [OUT_DIR [NAME...]]")
