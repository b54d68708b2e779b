"""Write the converter-made op-suite models of tests/data/ops/ with TensorFlow (a developer tool).

    /work/tfvenv/bin/python tools/make_op_models.py [OUT_DIR]

``stft.tflite``: ``|tf.signal.stft(x, 64, 32, 64)|`` of a (1, 256) signal (RESHAPE, GATHER,
MUL, RFFT2D, COMPLEX_ABS). ``stft_dynamic_batch.tflite``: the same with a dynamic batch
(``shape_signature`` -1), which the converter writes with a shape-computing subgraph and an
empty int32 constant (shape ``(0,)``, empty buffer) as a RESHAPE's target shape.
``nms_v4.tflite`` / ``nms_v5.tflite``: ``tf.image.non_max_suppression`` (50 boxes, at most 10)
and its soft-NMS form, whose outputs the converter stores with a placeholder shape ``[1]``
(``shape_signature`` ``[-1]``) that LiteRT resizes at Prepare. ``converted_*.tflite``: small
functions and Keras layers whose ops gpulite's op suite also builds by hand (TOPK_V2,
L2_NORMALIZATION, LOCAL_RESPONSE_NORMALIZATION, UNSORTED_SEGMENT_MAX, CONV_3D,
CONV_3D_TRANSPOSE), so the converter's own encoding of their options is checked too.
"""

from __future__ import annotations

import pathlib
import sys

import tensorflow as tf


def convert(fn, *specs: tf.TensorSpec) -> bytes:
    f = tf.function(fn, input_signature=list(specs))
    return tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f).convert()


def keras(*layers, shape) -> bytes:
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape, batch_size=1), *layers])
    return tf.lite.TFLiteConverter.from_keras_model(model).convert()


CONVERTED = {
    "topk": lambda: convert(lambda x: tf.math.top_k(x, 4), tf.TensorSpec([3, 20])),
    "l2_normalize": lambda: convert(lambda x: tf.math.l2_normalize(x, -1), tf.TensorSpec([3, 20])),
    "lrn": lambda: convert(lambda x: tf.nn.local_response_normalization(x, 2, 1.0, 0.5, 0.75),
                           tf.TensorSpec([1, 4, 4, 8])),
    "unsorted_segment_max": lambda: convert(lambda x: tf.math.unsorted_segment_max(x, tf.constant([0, 2, 1, 2]), 3),
                                            tf.TensorSpec([4, 5])),
    "conv3d": lambda: keras(tf.keras.layers.Conv3D(4, 3, padding="same", activation="relu"),
                            tf.keras.layers.Conv3D(5, (2, 3, 3), strides=(1, 2, 2)), shape=(6, 8, 8, 3)),
    "conv3d_transpose": lambda: keras(tf.keras.layers.Conv3DTranspose(4, 3, strides=2, padding="same"),
                                      tf.keras.layers.Conv3DTranspose(2, (2, 3, 1), strides=(1, 2, 3)),
                                      shape=(3, 4, 5, 3)),
}


def stft(x):
    return tf.abs(tf.signal.stft(x, frame_length=64, frame_step=32, fft_length=64))


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ops")
    out.mkdir(parents=True, exist_ok=True)
    (out / "stft.tflite").write_bytes(convert(stft, tf.TensorSpec([1, 256])))
    (out / "stft_dynamic_batch.tflite").write_bytes(convert(stft, tf.TensorSpec([None, 256])))
    boxes = (tf.TensorSpec([50, 4]), tf.TensorSpec([50]))
    (out / "nms_v4.tflite").write_bytes(convert(lambda b, s: tf.image.non_max_suppression(b, s, 10, 0.5, 0.1), *boxes))
    (out / "nms_v5.tflite").write_bytes(convert(
        lambda b, s: tf.image.non_max_suppression_with_scores(b, s, 10, 0.5, 0.1, soft_nms_sigma=0.5), *boxes))
    for name, make in CONVERTED.items():
        (out / f"converted_{name}.tflite").write_bytes(make())


if __name__ == "__main__":
    main()
