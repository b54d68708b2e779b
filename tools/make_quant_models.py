"""Write the small converter-made quantized models under ``tests/data/quant/`` (developer tool).

Three Keras models with seeded random weights — a small conv net, an MLP, and a
MobileNetV3Small-like block (hard-swish, depthwise conv, squeeze-excite, residual) — each
converted by TensorFlow's ``TFLiteConverter`` the ways tutorials do it:

- ``dynamic``: ``optimizations=[DEFAULT]`` without a representative dataset (hybrid ops);
- ``float16``: ``DEFAULT`` with ``supported_types=[float16]`` (fp16 weights + DEQUANTIZE);
- ``int8``: full integer quantization with a representative dataset, float I/O;
- ``int8io``: the same with ``inference_input_type/inference_output_type = int8``;
- ``uint8io``: the same with uint8 I/O (QUANTIZE between uint8 and int8 at the boundaries);
- ``int16x8``: int16 activations and int8 weights
  (``EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8``), float I/O.

Needs TensorFlow (not a gpulite dependency); run with a TensorFlow environment from the
repository root: ``python tools/make_quant_models.py``. ``tests/test_quant_models.py``
compares every file against LiteRT without TensorFlow.
"""

from __future__ import annotations

import pathlib

import numpy as np
import tensorflow as tf

OUT = pathlib.Path(__file__).resolve().parents[1] / "tests" / "data" / "quant"


def conv_net() -> tf.keras.Model:
    x = inp = tf.keras.Input((16, 16, 3), batch_size=1)
    # wide enough that the converter's dynamic-range mode (weights of >= 1024 values) quantizes
    # the depthwise filter too
    x = tf.keras.layers.Conv2D(128, 3, strides=2, padding="same", activation="relu")(x)
    x = tf.keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = tf.keras.layers.Conv2D(32, 1)(x)
    x = tf.keras.layers.Conv2D(32, 3, padding="valid", activation="relu")(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(40)(x)
    return tf.keras.Model(inp, tf.keras.layers.Softmax()(x))


def mlp() -> tf.keras.Model:
    x = inp = tf.keras.Input((32,), batch_size=3)
    x = tf.keras.layers.Dense(64, activation="relu")(x)
    x = tf.keras.layers.Dense(48, activation="tanh")(x)
    return tf.keras.Model(inp, tf.keras.layers.Dense(24)(x))


def mobilenet_v3_block() -> tf.keras.Model:
    hs = tf.keras.activations.hard_swish if hasattr(tf.keras.activations, "hard_swish") else None
    x = inp = tf.keras.Input((16, 16, 8), batch_size=1)
    x = tf.keras.layers.Conv2D(32, 1, use_bias=False)(x)
    x = tf.keras.layers.BatchNormalization()(x)
    x = tf.keras.layers.Activation(hs)(x)
    y = tf.keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    y = tf.keras.layers.BatchNormalization()(y)
    y = tf.keras.layers.Activation(hs)(y)
    s = tf.keras.layers.GlobalAveragePooling2D(keepdims=True)(y)
    s = tf.keras.layers.Conv2D(40, 1, activation="relu")(s)
    s = tf.keras.layers.Conv2D(32, 1, activation="hard_sigmoid")(s)
    y = tf.keras.layers.Multiply()([y, s])
    y = tf.keras.layers.Conv2D(32, 1, use_bias=False)(y)
    y = tf.keras.layers.BatchNormalization()(y)
    x = tf.keras.layers.Add()([x, y])
    x = tf.keras.layers.Conv2D(48, 1)(x)
    x = tf.keras.layers.Activation(hs)(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    return tf.keras.Model(inp, tf.keras.layers.Dense(24)(x))


MODELS = {"conv_net": conv_net, "mlp": mlp, "mnv3_block": mobilenet_v3_block}
MODES = ("dynamic", "float16", "int8", "int8io", "uint8io", "int16x8")
# the converter has no 16x8 HARD_SWISH ("Quantization to 16x8-bit not yet supported")
SKIP = {("mnv3_block", "int16x8")}


def randomize(model: tf.keras.Model, seed: int) -> None:
    """Seeded weights with BatchNorm statistics far from identity, so folding matters."""
    rng = np.random.default_rng(seed)
    for layer in model.layers:
        weights = layer.get_weights()
        if not weights:
            continue
        if isinstance(layer, tf.keras.layers.BatchNormalization):
            gamma, beta, mean, var = weights
            layer.set_weights([rng.uniform(0.5, 1.5, gamma.shape), rng.normal(0, 0.3, beta.shape),
                               rng.normal(0, 0.3, mean.shape), rng.uniform(0.5, 2.0, var.shape)])
        else:
            layer.set_weights([rng.normal(0, 1.0 / np.sqrt(max(1, w.size // w.shape[-1])), w.shape)
                               for w in weights])


def convert(model: tf.keras.Model, mode: str) -> bytes:
    conv = tf.lite.TFLiteConverter.from_keras_model(model)
    conv.optimizations = [tf.lite.Optimize.DEFAULT]
    if mode == "float16":
        conv.target_spec.supported_types = [tf.float16]
    elif mode in ("int8", "int8io", "uint8io", "int16x8"):
        shape = [int(d) for d in model.inputs[0].shape]
        rng = np.random.default_rng(1)

        def representative():
            for _ in range(32):
                yield [rng.normal(0, 1, shape).astype(np.float32)]
        conv.representative_dataset = representative
        conv.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8 if mode == "int16x8"
            else tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        if mode in ("int8io", "uint8io"):
            conv.inference_input_type = conv.inference_output_type = tf.int8 if mode == "int8io" else tf.uint8
    return conv.convert()


def main() -> None:
    tf.keras.utils.set_random_seed(0)
    OUT.mkdir(parents=True, exist_ok=True)
    for seed, (name, build) in enumerate(MODELS.items()):
        model = build()
        randomize(model, seed)
        for mode in MODES:
            if (name, mode) in SKIP:
                continue
            path = OUT / f"{name}_{mode}.tflite"
            path.write_bytes(convert(model, mode))
            print(path.relative_to(OUT.parents[2]), path.stat().st_size, "bytes")


if __name__ == "__main__":
    main()
