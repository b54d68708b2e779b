"""Write the converter-made model corpus of ``tests/data/corpus/`` (issue 12), and check it in LiteRT.

A developer tool, never a test or runtime dependency. Two steps, two virtual environments::

    /work/tfvenv/bin/python tools/make_corpus.py build [OUT_DIR]   # TensorFlow 2.21 (cpu) + tf_keras
    /work/venv/bin/python tools/make_corpus.py check [OUT_DIR]     # ai_edge_litert, no TensorFlow

``build`` makes small Keras models with random weights (seed ``SEED``, reset before each model),
converts each with ``tf.lite.TFLiteConverter`` the way the tutorials do, in five variants:

- ``float32``: plain conversion;
- ``float16``: ``optimizations=[DEFAULT]``, ``target_spec.supported_types=[tf.float16]``;
- ``dynrange``: ``optimizations=[DEFAULT]`` without a representative dataset (hybrid);
- ``int8``: full-integer with a representative dataset, float I/O (ops the converter cannot
  quantize stay float, the tutorial's default);
- ``int8io``: integer only, ``supported_ops=[TFLITE_BUILTINS_INT8]``, int8 input and output
  (``inference_input_type``/``inference_output_type``); skipped where the converter refuses.

Every model is converted from a ``tf.function`` whose input signature has batch ``None``, so
its inputs carry ``shape_signature`` -1 (what ``model.export()`` and SavedModels give), except:

- the RNN classifiers (``lstm``, ``gru``, ``bilstm``): TensorFlow's converter cannot lower the
  Keras loop with an unknown batch ("Lowering tensor list ops is failed"), so they use batch 1
  as the TFLite LSTM tutorial does. They are built with ``tf_keras`` (Keras 2), whose LSTM the
  converter fuses into UNIDIRECTIONAL_SEQUENCE_LSTM (Keras 3's LSTM becomes a WHILE loop over
  resource variables); GRU becomes a WHILE loop either way.
- ``ssd_detector`` is exported with batch 1 as the Object Detection API exports SSD models:
  TFLite_Detection_PostProcess reads box 0 of the batch only.

``ssd_detector`` ends in the custom op TFLite_Detection_PostProcess, made the known way: a
``tf.function`` with ``experimental_implements`` naming the op and its attributes (as the
Object Detection API's ``export_tflite_graph_tf2.py`` does), converted with
``allow_custom_ops=True``.

``check`` loads every file in LiteRT, resizes the input batch to 1 and 2 (batch 1 only for
the fixed-batch models), runs it on seeded inputs and prints the ops; ``build`` writes
``SHA256SUMS``. No model is dropped today: LiteRT runs every file written. Variants the
converter refuses are listed with its message in ``SKIPPED``; ``gru`` int8/int8io are not even
tried (``CONVERTER_CRASHES``: TensorFlow 2.21's converter dies with SIGSEGV calibrating them).
``build OUT_DIR NAME...`` rebuilds only those models (SHA256SUMS and SKIPPED are updated).
"""

from __future__ import annotations

import hashlib
import os
import sys
import tempfile
from pathlib import Path

SEED = 12
OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "corpus"
VARIANTS = ("float32", "float16", "dynrange", "int8", "int8io")
VOCAB = 64  # token ids of the transformer_tokens model: [0, VOCAB)
RNNS = ("lstm", "gru", "bilstm")
# TensorFlow 2.21's converter crashes (SIGSEGV) calibrating these: not attempted, listed in SKIPPED.
CONVERTER_CRASHES = {("gru", "int8"), ("gru", "int8io")}
FIXED_BATCH = (*RNNS, "ssd_detector")


# ----------------------------------------------------------------------------- models (TensorFlow)

def _keras3():
    import keras

    return keras


def mobilenet_v2(keras):
    base = keras.applications.MobileNetV2(input_shape=(48, 48, 3), alpha=0.35, include_top=False, weights=None)
    x = base.get_layer("block_12_add").output  # cut: the later blocks repeat these ops at 4x the weights
    return _classifier_top(keras, base.input, x)


def mobilenet_v3_small(keras):
    base = keras.applications.MobileNetV3Small(input_shape=(48, 48, 3), alpha=0.75, include_top=False,
                                               weights=None)
    x = base.get_layer("expanded_conv_4_add").output  # after the first hard-swish + squeeze-excite blocks
    # Keras's own MobileNetV3 top: 1x1 convs on the pooled features, then Flatten, whose
    # dynamic-batch RESHAPE the converter computes with SHAPE -> STRIDED_SLICE -> PACK.
    x = keras.layers.GlobalAveragePooling2D(keepdims=True)(x)
    x = keras.layers.Activation("hard_swish")(keras.layers.Conv2D(64, 1)(x))
    x = keras.layers.Flatten()(keras.layers.Conv2D(10, 1)(x))
    return keras.Model(base.input, keras.layers.Softmax()(x))


def _classifier_top(keras, inp, x, classes=10):
    x = keras.layers.GlobalAveragePooling2D()(x)
    return keras.Model(inp, keras.layers.Dense(classes, activation="softmax")(x))


def efficientnet_style(keras):
    layers = keras.layers

    def mbconv(x, expand, out, stride):
        c = x.shape[-1]
        y = layers.Conv2D(c * expand, 1, use_bias=False)(x)
        y = layers.Activation("swish")(layers.BatchNormalization()(y))
        y = layers.DepthwiseConv2D(3, stride, padding="same", use_bias=False)(y)
        y = layers.Activation("swish")(layers.BatchNormalization()(y))
        se = layers.GlobalAveragePooling2D(keepdims=True)(y)
        se = layers.Conv2D(max(4, c // 4), 1, activation="swish")(se)
        se = layers.Conv2D(c * expand, 1, activation="sigmoid")(se)
        y = layers.Multiply()([y, se])
        y = layers.BatchNormalization()(layers.Conv2D(out, 1, use_bias=False)(y))
        return layers.Add()([x, y]) if stride == 1 and c == out else y

    inp = keras.Input((48, 48, 3))
    x = layers.Rescaling(1 / 127.5, offset=-1)(inp)
    x = layers.Activation("swish")(layers.BatchNormalization()(layers.Conv2D(16, 3, 2, padding="same")(x)))
    for expand, out, stride in ((1, 16, 1), (4, 24, 2), (4, 24, 1), (4, 40, 2), (4, 40, 1)):
        x = mbconv(x, expand, out, stride)
    x = layers.Activation("swish")(layers.Conv2D(96, 1)(x))
    return _classifier_top(keras, inp, x)


def resnet(keras):
    layers = keras.layers

    def block(x, filters, stride):
        y = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(filters, 3, stride, padding="same")(x)))
        y = layers.BatchNormalization()(layers.Conv2D(filters, 3, padding="same")(y))
        if stride != 1 or x.shape[-1] != filters:
            x = layers.BatchNormalization()(layers.Conv2D(filters, 1, stride)(x))
        return layers.ReLU()(layers.Add()([x, y]))

    inp = keras.Input((32, 32, 3))
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(16, 3, padding="same")(inp)))
    x = layers.MaxPooling2D(2)(x)
    for filters, stride in ((16, 1), (32, 2), (48, 2)):
        x = block(x, filters, stride)
    return _classifier_top(keras, inp, x)


def densenet(keras):
    layers = keras.layers

    def dense_block(x, n, growth=8):
        for _ in range(n):
            y = layers.ReLU()(layers.BatchNormalization()(x))
            y = layers.Conv2D(2 * growth, 1, use_bias=False)(y)
            y = layers.Conv2D(growth, 3, padding="same", use_bias=False)(layers.ReLU()(layers.BatchNormalization()(y)))
            x = layers.Concatenate()([x, y])
        return x

    def transition(x):
        x = layers.ReLU()(layers.BatchNormalization()(x))
        x = layers.Conv2D(x.shape[-1] // 2, 1, use_bias=False)(x)
        return layers.AveragePooling2D(2)(x)

    inp = keras.Input((32, 32, 3))
    x = layers.ZeroPadding2D(1)(inp)
    x = layers.Conv2D(16, 3, 2, use_bias=False)(x)
    x = transition(dense_block(x, 3))
    x = dense_block(x, 3)
    x = layers.ReLU()(layers.BatchNormalization()(layers.AveragePooling2D(2)(x)))
    return keras.Model(inp, layers.Dense(10, activation="softmax")(layers.Flatten()(x)))


def unet(keras):
    layers = keras.layers

    def conv2(x, f):
        for _ in range(2):
            x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(f, 3, padding="same")(x)))
        return x

    inp = keras.Input((32, 32, 3))
    skips, x = [], inp
    for f in (8, 16, 32):
        x = conv2(x, f)
        skips.append(x)
        x = layers.MaxPooling2D(2)(x)
    x = conv2(x, 48)
    for f, skip in zip((32, 16, 8), reversed(skips), strict=True):
        up = layers.Conv2DTranspose(f, 2, 2)(x) if f == 32 else layers.UpSampling2D(2, interpolation="bilinear")(x)
        x = conv2(layers.Concatenate()([up, skip]), f)
    return keras.Model(inp, layers.Conv2D(2, 1, activation="sigmoid")(x))


def _encoder_block(keras, x, gelu_approximate, mask=None):
    layers = keras.layers
    d = x.shape[-1]
    a = layers.MultiHeadAttention(num_heads=2, key_dim=d // 2)(x, x, attention_mask=mask)
    x = layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, a]))
    f = layers.Dense(2 * d)(x)
    f = layers.Activation(lambda t: keras.activations.gelu(t, approximate=gelu_approximate))(f)
    f = layers.Dense(d)(f)
    return layers.LayerNormalization(epsilon=1e-6)(layers.Add()([x, f]))


def transformer(keras):
    """Two encoder blocks on a [B, 16, 32] feature sequence: GELU approximate, then exact."""
    layers = keras.layers
    inp = keras.Input((16, 32))
    x = layers.Dense(32)(inp)
    for approximate in (True, False):
        x = _encoder_block(keras, x, approximate)
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(5)(x))


def transformer_tokens(keras):
    """Token ids [B, 12] (int32, 0 = padding) -> embedding + position, masked attention."""
    import tensorflow as tf

    layers = keras.layers

    class PaddingMask(layers.Layer):
        def call(self, ids):
            keep = tf.not_equal(ids, 0)
            return tf.logical_and(keep[:, :, None], keep[:, None, :])

    class AddPosition(layers.Layer):
        def build(self, shape):
            self.pos = self.add_weight(shape=(shape[1], shape[2]), initializer="random_normal")

        def call(self, x):
            return x + self.pos

    inp = keras.Input((12,), dtype="int32")
    x = AddPosition()(layers.Embedding(VOCAB, 32)(inp))
    x = _encoder_block(keras, x, False, PaddingMask()(inp))
    x = layers.GlobalAveragePooling1D()(x)
    return keras.Model(inp, layers.Dense(3, activation="softmax")(x))


def _rnn(layer_name, bidirectional=False):
    def build(_keras):
        import tf_keras

        # 48 units on 40 features: each gate's weight matrix has >= 1024 elements, the least the
        # converter's dynamic-range mode quantizes (smaller ones stay float: no hybrid op at all).
        layer = getattr(tf_keras.layers, layer_name)(48)
        if bidirectional:
            layer = tf_keras.layers.Bidirectional(layer)
        inp = tf_keras.Input((20, 40))
        return tf_keras.Model(inp, tf_keras.layers.Dense(4, activation="softmax")(layer(inp)))
    return build


def audio_stft(keras):
    """[B, 4000] waveform -> STFT magnitude (RFFT2D + COMPLEX_ABS) -> log-mel -> small CNN."""
    import tensorflow as tf

    layers = keras.layers
    mel = tf.signal.linear_to_mel_weight_matrix(16, 129, 8000, 40.0, 3800.0)

    class LogMel(layers.Layer):
        def call(self, wave):
            spec = tf.abs(tf.signal.stft(wave, frame_length=256, frame_step=128, fft_length=256))
            return tf.expand_dims(tf.math.log(tf.matmul(spec, mel) + 1e-6), -1)

    inp = keras.Input((4000,))
    x = LogMel()(inp)
    x = layers.Conv2D(8, 3, activation="relu", padding="same")(x)
    x = layers.MaxPooling2D(2)(x)
    x = layers.Conv2D(16, 3, activation="relu", padding="same")(x)
    return _classifier_top(keras, inp, x, classes=6)


SSD_CLASSES, SSD_MAX_DETECTIONS = 3, 10


def _ssd_anchors(sizes=((8, 0.2), (4, 0.45)), ratios=(1.0, 2.0, 0.5)):
    import numpy as np

    out = []
    for n, scale in sizes:
        for i in range(n):
            for j in range(n):
                for r in ratios:
                    out.append(((i + 0.5) / n, (j + 0.5) / n, scale / np.sqrt(r), scale * np.sqrt(r)))
    return np.asarray(out, np.float32)  # [N, 4] as (y, x, h, w), what the post-process reads


def ssd_detector(keras):
    """Two feature maps (8x8, 4x4) x 3 anchors, box and class heads, TFLite_Detection_PostProcess."""
    import tensorflow as tf

    layers = keras.layers
    anchors = _ssd_anchors()
    inp = keras.Input((32, 32, 3))
    x = layers.ReLU(6.0)(layers.Conv2D(8, 3, 2, padding="same")(inp))
    f1 = layers.ReLU(6.0)(layers.Conv2D(16, 3, 2, padding="same")(x))
    f2 = layers.ReLU(6.0)(layers.Conv2D(24, 3, 2, padding="same")(f1))
    boxes, scores = [], []
    for f in (f1, f2):
        boxes.append(layers.Reshape((-1, 4))(layers.Conv2D(3 * 4, 3, padding="same")(f)))
        s = layers.Conv2D(3 * (SSD_CLASSES + 1), 3, padding="same")(f)
        scores.append(layers.Reshape((-1, SSD_CLASSES + 1))(s))
    boxes = layers.Concatenate(axis=1)(boxes)
    scores = layers.Activation("sigmoid")(layers.Concatenate(axis=1)(scores))
    head = keras.Model(inp, [boxes, scores])

    attrs = {"max_detections": ("i", SSD_MAX_DETECTIONS), "max_classes_per_detection": ("i", 1),
             "detections_per_class": ("i", 5), "use_regular_nms": ("b", "false"),
             "nms_score_threshold": ("f", 0.3), "nms_iou_threshold": ("f", 0.5), "num_classes": ("i", SSD_CLASSES),
             "y_scale": ("f", 10.0), "x_scale": ("f", 10.0), "h_scale": ("f", 5.0), "w_scale": ("f", 5.0)}
    signature = " ".join(['name: "TFLite_Detection_PostProcess"'] +
                         [f'attr {{ key: "{k}" value {{ {t}: {v} }} }}' for k, (t, v) in attrs.items()])

    @tf.function(experimental_implements=signature)
    def post_process(box_encodings, class_predictions, anchor_boxes):
        # The converter replaces this body by the custom op; these stand-ins only give it outputs.
        zero = tf.constant(0.0, tf.float32)
        return zero, zero, zero, zero  # boxes, classes, scores, num_detections

    class Detector(tf.Module):
        def __init__(self):
            super().__init__()
            self.head = head

        def __call__(self, images):
            b, s = self.head(images)
            return post_process(b, s, tf.constant(anchors))

    return Detector()


MODELS = {
    "mobilenet_v2": mobilenet_v2,
    "mobilenet_v3_small": mobilenet_v3_small,
    "efficientnet_style": efficientnet_style,
    "resnet": resnet,
    "densenet": densenet,
    "unet": unet,
    "transformer": transformer,
    "transformer_tokens": transformer_tokens,
    "lstm": _rnn("LSTM"),
    "gru": _rnn("GRU"),
    "bilstm": _rnn("LSTM", bidirectional=True),
    "audio_stft": audio_stft,
    "ssd_detector": ssd_detector,
}


def _input_spec(model, name):
    import tensorflow as tf

    if name == "ssd_detector":
        return tf.TensorSpec((1, 32, 32, 3), tf.float32)
    t = model.inputs[0]
    batch = 1 if name in FIXED_BATCH else None
    return tf.TensorSpec((batch, *t.shape[1:]), t.dtype)


def sample_inputs(spec_shape, dtype, seed, n=1):
    """Seeded inputs the tests use too: uniform [-1, 1] floats (x 127.5 + 127.5 for images in
    [0, 255] where a model rescales), token ids in [0, VOCAB)."""
    import numpy as np

    rng = np.random.default_rng(seed)
    shape = (n, *spec_shape[1:])
    if np.dtype(dtype).kind == "i":
        return rng.integers(0, VOCAB, shape).astype(dtype)
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


def convert_all(name):
    """One model in every variant: {variant: .tflite bytes or the converter's exception}."""
    import tensorflow as tf
    import tf_keras

    keras = _keras3()
    # A fresh session per model: layer names (which end up in the file) count from zero, so a
    # model's file does not depend on which models were built before it in the same process.
    keras.backend.clear_session()
    tf_keras.backend.clear_session()
    keras.utils.set_random_seed(SEED)
    tf_keras.utils.set_random_seed(SEED)
    model = MODELS[name](keras)
    spec = _input_spec(model.head if name == "ssd_detector" else model, name)
    fn = tf.function(lambda x: model(x))
    results = {}
    if name in RNNS:  # tf_keras, converted as the TFLite LSTM tutorial does
        for variant in VARIANTS:
            converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function(spec)], model)
            results[variant] = _convert(_configure(converter, name, variant, spec), name, variant)
        return results
    # Keras 3: through a SavedModel written as model.export() writes it (ExportArchive), which
    # freezes the variables (a plain tf.Module left them as VAR_HANDLE/READ_VARIABLE ops).
    archive = keras.export.ExportArchive()
    archive.track(model.head if name == "ssd_detector" else model)
    archive.add_endpoint("serve", fn, input_signature=[spec])
    with tempfile.TemporaryDirectory() as saved:
        archive.write_out(saved, verbose=False)
        for variant in VARIANTS:
            converter = tf.lite.TFLiteConverter.from_saved_model(saved)
            results[variant] = _convert(_configure(converter, name, variant, spec), name, variant)
    return results


def _convert(converter, name, variant):
    if (name, variant) in CONVERTER_CRASHES:
        return RuntimeError("TensorFlow's converter crashes (SIGSEGV) calibrating the WHILE loop")
    try:
        return converter.convert()
    except Exception as e:  # the converter refuses: recorded as a skip
        return e


def _configure(converter, name, variant, spec):
    import tensorflow as tf

    if name == "ssd_detector":
        converter.allow_custom_ops = True
    if variant != "float32":
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "float16":
        converter.target_spec.supported_types = [tf.float16]
    if variant in ("int8", "int8io"):
        batch = spec.shape[0] or 1

        def representative():
            for s in range(8):
                yield [sample_inputs((batch, *spec.shape[1:]), spec.dtype.as_numpy_dtype, 1000 + s, batch)]
        converter.representative_dataset = representative
    if variant == "int8io":
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if spec.dtype == tf.float32:  # token ids stay int32
            converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    return converter


def build(out: Path, names=()) -> None:
    import tensorflow as tf

    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    out.mkdir(parents=True, exist_ok=True)
    skipped = []
    for name in names or MODELS:
        for variant, data in convert_all(name).items():
            if isinstance(data, Exception):
                lines = str(data).strip().splitlines()
                why = next((line for line in lines if "error:" in line), lines[-1])[-200:]
                skipped.append((name, variant, why))
                print(f"SKIP {name}_{variant}: {why}", flush=True)
                continue
            (out / f"{name}_{variant}.tflite").write_bytes(data)
            print(f"{name}_{variant}: {len(data)} bytes", flush=True)
    # SKIPPED keeps the other models' lines when only some were rebuilt
    built = {f"{n}_{v}" for n in names or MODELS for v in VARIANTS}
    old = (out / "SKIPPED").read_text().splitlines(keepends=True) if (out / "SKIPPED").exists() else []
    kept = [line for line in old if line.split(":", 1)[0] not in built]
    (out / "SKIPPED").write_text("".join(sorted(kept + [f"{n}_{v}: {w}\n" for n, v, w in skipped])))
    write_sums(out)
    print("TensorFlow", tf.__version__)


def write_sums(out: Path) -> None:
    lines = [f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.name}\n" for p in sorted(out.glob("*.tflite"))]
    (out / "SHA256SUMS").write_text("".join(lines))


# ----------------------------------------------------------------------------- check (LiteRT)

def quantize(x, detail):
    """Float ``x`` to the int8 input described by a LiteRT input ``detail``."""
    import numpy as np

    scale, zero = detail["quantization"]
    return np.clip(np.round(x / scale) + zero, -128, 127).astype(np.int8)


def check(out: Path) -> int:
    """Run every corpus file in LiteRT at batch 1 and 2; print ops and failures; return #failures."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    bad = 0
    for path in sorted(out.glob("*.tflite")):
        fixed = path.stem.rsplit("_", 1)[0] in FIXED_BATCH
        ops = set()
        try:
            for batch in (1,) if fixed else (1, 2):
                it = Interpreter(model_path=str(path))
                d = it.get_input_details()[0]
                it.resize_tensor_input(d["index"], [batch, *d["shape"][1:]])
                it.allocate_tensors()
                x = sample_inputs(tuple(d["shape"]), d["dtype"], 0, batch)
                if d["dtype"] == np.int8:
                    x = quantize(sample_inputs(tuple(d["shape"]), np.float32, 0, batch), d)
                it.set_tensor(d["index"], x)
                it.invoke()
                shapes = [tuple(it.get_tensor(o["index"]).shape) for o in it.get_output_details()]
                ops |= {o["op_name"] for o in it._get_ops_details()}
            print(f"ok   {path.name}: outputs {shapes}, ops {sorted(ops)}")
        except Exception as e:
            bad += 1
            print(f"FAIL {path.name}: {type(e).__name__}: {e}")
    return bad


if __name__ == "__main__":
    cmd = sys.argv[1] if len(sys.argv) > 1 else "build"
    where = Path(sys.argv[2]) if len(sys.argv) > 2 else OUT
    if cmd == "build":
        build(where, sys.argv[3:])
    elif cmd == "check":
        sys.exit(1 if check(where) else 0)
    else:
        sys.exit(f"usage: {sys.argv[0]} build|check [OUT_DIR]")
