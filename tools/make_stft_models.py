"""Write the STFT test models of tests/data/ops/ with TensorFlow's converter (a developer tool).

    /work/tfvenv/bin/python tools/make_stft_models.py [OUT_DIR]

``stft.tflite``: ``|tf.signal.stft(x, 64, 32, 64)|`` of a (1, 256) signal (RESHAPE, GATHER,
MUL, RFFT2D, COMPLEX_ABS). ``stft_dynamic_batch.tflite``: the same with a dynamic batch
(``shape_signature`` -1), which the converter writes with a shape-computing subgraph and an
empty int32 constant (shape ``(0,)``, empty buffer) as a RESHAPE's target shape.
"""

from __future__ import annotations

import pathlib
import sys

import tensorflow as tf


def convert(batch: int | None) -> bytes:
    @tf.function(input_signature=[tf.TensorSpec([batch, 256], tf.float32)])
    def stft(x):
        return tf.abs(tf.signal.stft(x, frame_length=64, frame_step=32, fft_length=64))

    return tf.lite.TFLiteConverter.from_concrete_functions([stft.get_concrete_function()], stft).convert()


def main() -> None:
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "tests/data/ops")
    out.mkdir(parents=True, exist_ok=True)
    (out / "stft.tflite").write_bytes(convert(1))
    (out / "stft_dynamic_batch.tflite").write_bytes(convert(None))


if __name__ == "__main__":
    main()
