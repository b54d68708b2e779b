"""Write the small dynamic-batch models of ``tests/data/dynamic/`` with TensorFlow's converter.

A developer tool (TensorFlow is no test or runtime dependency); run it with a TensorFlow
environment from the repository root::

    python tools/make_dynamic_models.py [OUT_DIR]   # default tests/data/dynamic

Each model is exported the way users export theirs, with the batch dimension None, so the
files carry ``shape_signature`` -1 and the converter's run-time shape chains
(SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE for a Keras ``Flatten``/``Reshape``):

- ``dense_dynamic.tflite``: Keras ``Flatten -> Dense -> Reshape -> Dense``, via ``model.export``;
- ``conv_dynamic.tflite``: Keras ``Conv2D -> MaxPool -> DepthwiseConv2D -> Flatten -> Dense``, via ``model.export``;
- ``slicing_dynamic.tflite``: batch and length None: a STRIDED_SLICE to half the run-time length,
  a PAD to length 8 and a TILE by the run-time batch (their begin/end, paddings, multiples all
  computed from ``tf.shape``);
- ``where_dynamic.tflite``: ``tf.where(x > 0.25)`` (indices: a shape known only from the data),
  the elements it picks (``tf.gather_nd``) and their count, and a reshape of the input by its
  run-time shape, from a ``tf.function`` with ``TensorSpec([None, 6])`` saved as a SavedModel.

Weights are seeded, so a rerun writes the same files.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import keras
import numpy as np
import tensorflow as tf


def _convert_saved_model(model: keras.Model) -> bytes:
    with tempfile.TemporaryDirectory() as d:
        model.export(d, format="tf_saved_model", verbose=False)
        return tf.lite.TFLiteConverter.from_saved_model(d).convert()


def dense() -> bytes:
    keras.utils.set_random_seed(1)
    x = keras.Input((4, 6))
    y = keras.layers.Flatten()(x)
    y = keras.layers.Dense(16, activation="relu")(y)
    y = keras.layers.Reshape((2, 8))(y)
    y = keras.layers.Dense(3)(y)
    return _convert_saved_model(keras.Model(x, y))


def conv() -> bytes:
    keras.utils.set_random_seed(2)
    x = keras.Input((12, 12, 3))
    y = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    y = keras.layers.MaxPooling2D(2)(y)
    y = keras.layers.DepthwiseConv2D(3, activation="relu6")(y)
    y = keras.layers.Flatten()(y)
    y = keras.layers.Dense(5)(y)
    return _convert_saved_model(keras.Model(x, y))


def where() -> bytes:
    @tf.function(input_signature=[tf.TensorSpec([None, 6], tf.float32)])
    def f(x):
        positions = tf.where(x > 0.25)
        rows = tf.reshape(x * 2.0, tf.stack([tf.shape(x)[0], 2, 3]))
        picked = tf.gather_nd(x, positions) - 0.25  # after the data-dependent shape: run after each invoke
        return {"positions": positions, "rows": rows, "picked": picked, "count": tf.shape(picked)[0]}

    module = tf.Module()
    module.f = f
    with tempfile.TemporaryDirectory() as d:
        tf.saved_model.save(module, d, signatures={"serving_default": f})
        return tf.lite.TFLiteConverter.from_saved_model(d).convert()


def slicing() -> bytes:
    @tf.function(input_signature=[tf.TensorSpec([None, None, 4], tf.float32)])
    def f(x):
        half = x[:, : tf.shape(x)[1] // 2] * 3.0 + tf.reduce_mean(x, axis=1, keepdims=True)
        padded = tf.pad(x, [[0, 0], [0, 8 - tf.shape(x)[1]], [0, 0]])
        tiled = tf.tile(tf.constant([[1.0, 2.0, 3.0, 4.0]]), [tf.shape(x)[0], 1]) + x[:, 0]
        return {"half": half, "padded": padded, "tiled": tiled}

    return tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f).convert()


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/dynamic")
    out.mkdir(parents=True, exist_ok=True)
    np.random.seed(0)
    for name, make in (("dense_dynamic", dense), ("conv_dynamic", conv), ("where_dynamic", where),
                       ("slicing_dynamic", slicing)):
        data = make()
        (out / f"{name}.tflite").write_bytes(data)
        print(f"{name}.tflite: {len(data)} bytes")


if __name__ == "__main__":
    main()
