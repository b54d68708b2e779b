"""Write the converter-made op-suite models of tests/data/ops/ with TensorFlow (a developer tool).

    /work/tfvenv/bin/python tools/make_op_models.py [OUT_DIR]

``stft.tflite``: ``|tf.signal.stft(x, 64, 32, 64)|`` of a (1, 256) signal (RESHAPE, GATHER,
MUL, RFFT2D, COMPLEX_ABS). ``stft_dynamic_batch.tflite``: the same with a dynamic batch
(``shape_signature`` -1), which the converter writes with a shape-computing subgraph and an
empty int32 constant (shape ``(0,)``, empty buffer) as a RESHAPE's target shape.
``nms_v4.tflite`` / ``nms_v5.tflite``: ``tf.image.non_max_suppression`` (50 boxes, at most 10)
and its soft-NMS form, whose outputs the converter stores with a placeholder shape ``[1]``
(``shape_signature`` ``[-1]``) that LiteRT resizes at Prepare.
"""

from __future__ import annotations

import pathlib
import sys

import tensorflow as tf


def convert(fn, *specs: tf.TensorSpec) -> bytes:
    f = tf.function(fn, input_signature=list(specs))
    return tf.lite.TFLiteConverter.from_concrete_functions([f.get_concrete_function()], f).convert()


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


if __name__ == "__main__":
    main()
