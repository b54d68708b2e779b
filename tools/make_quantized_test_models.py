"""Write the small quantized models of tests/webgpu/test_quantized.py (a developer tool).

Run with TensorFlow (not a gpulite dependency), from the repository root:

    /path/to/tf-venv/bin/python tools/make_quantized_test_models.py

A seeded Keras CNN (conv, depthwise conv, residual add, hard swish, mean, dense, softmax) is
converted to full int8 with float I/O and with int8 I/O, to float16 weights and to dynamic-range
int8 weights, into
``tests/data/quantized/``; the same CNN with RELU for HARD_SWISH as full int8 with int8 I/O.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import tensorflow as tf

OUT = Path(__file__).resolve().parent.parent / "tests" / "data" / "quantized"
SHAPE = (16, 16, 3)


def model(hard_swish: bool = True) -> tf.keras.Model:
    tf.keras.utils.set_random_seed(7)
    x = inp = tf.keras.Input(SHAPE, batch_size=1)
    x = tf.keras.layers.Conv2D(8, 3, strides=2, padding="same", activation="relu6")(x)
    y = tf.keras.layers.DepthwiseConv2D(3, padding="same")(x)
    y = tf.keras.layers.Activation("hard_swish" if hard_swish else "relu")(y)
    y = tf.keras.layers.Conv2D(8, 1)(y)
    x = tf.keras.layers.Add()([x, y])
    x = tf.keras.layers.Conv2D(12, 3, padding="valid", activation="sigmoid")(x)
    x = tf.keras.layers.GlobalAveragePooling2D()(x)
    x = tf.keras.layers.Dense(5)(x)
    x = tf.keras.layers.Softmax()(x)
    return tf.keras.Model(inp, x)


def representative():
    rng = np.random.default_rng(0)
    for _ in range(32):
        yield [rng.uniform(-1, 1, (1, *SHAPE)).astype(np.float32)]


def convert(m: tf.keras.Model, kind: str) -> bytes:
    c = tf.lite.TFLiteConverter.from_keras_model(m)
    c.optimizations = [tf.lite.Optimize.DEFAULT]
    if kind == "fp16":
        c.target_spec.supported_types = [tf.float16]
        return c.convert()
    if kind == "dynamic_range":  # int8 weights, float activations (no representative dataset)
        return c.convert()
    c.representative_dataset = representative
    c.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    if kind == "int8_io":
        c.inference_input_type = tf.int8
        c.inference_output_type = tf.int8
    return c.convert()


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    m = model()
    for kind in ("int8_float_io", "int8_io", "fp16", "dynamic_range"):
        (OUT / f"small_cnn_{kind}.tflite").write_bytes(convert(m, kind))
    # Without HARD_SWISH (which LiteRT quantizes with its own int8 kernel): for quantized="exact".
    (OUT / "small_relu_cnn_int8_io.tflite").write_bytes(convert(model(hard_swish=False), "int8_io"))


if __name__ == "__main__":
    main()
