"""Write the small recurrent and control-flow test models under tests/data/rnn/ (a developer tool).

Needs TensorFlow (not a test dependency); the tests read only the written .tflite files::

    /work/tfvenv/bin/python tools/make_rnn_models.py [OUT_DIR]

Each Keras model has seeded random weights and a fixed batch of 1, and is written three
times: float32 (``NAME.tflite``), dynamic-range quantized (``NAME_dynamic.tflite``, the
converter's ``Optimize.DEFAULT`` without a representative dataset: int8 weights, float
activations; the converter quantizes only weights of 1,024 values or more, hence 32 units and
features) and float16 weights (``NAME_f16.tflite``: DEQUANTIZE nodes, one of which
initialises each LSTM state variable). What the converter makes of each:

- ``lstm``: a Keras 2 (``tf_keras``) LSTM classifier, one UNIDIRECTIONAL_SEQUENCE_LSTM;
- ``bilstm``: a Keras 2 Bidirectional LSTM returning sequences, then an LSTM (two sequence LSTMs
  running forwards and backwards, then a third);
- ``lstm_while``: the Keras 3 LSTM classifier (``tf.keras`` in TensorFlow 2.16+), which the
  converter does not fuse: a WHILE loop whose cond and body are further subgraphs;
- ``gru``: a Keras 3 GRU, a WHILE loop too;
- ``stacked``: Keras 3 layers returning sequences (GRU, Bidirectional LSTM, then SimpleRNN): WHILE
  loops whose bodies write each step's output into a tensor list (SLICE, CONCATENATION with
  shapes that change at every step, which gpulite rewrites into DYNAMIC_UPDATE_SLICE);
- ``cond``: a ``tf.cond`` on the input's sum, an IF with two branch subgraphs (float32 only: the
  converter leaves the branches' weights float under ``Optimize.DEFAULT``, so a dynamic-range
  file would be the same model);
- ``stateful``: a ``tf.Module`` adding its input into a ``tf.Variable`` at each call, converted
  with resource variables: CALL_ONCE (an init subgraph assigning the initial value),
  VAR_HANDLE, READ_VARIABLE and ASSIGN_VARIABLE (float32 only: there are no weights to quantize).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import tensorflow as tf
import tf_keras

STEPS, FEATURES, UNITS = 5, 32, 32


def _seeded(seed: int) -> None:
    tf.keras.utils.set_random_seed(seed)
    tf_keras.utils.set_random_seed(seed)
    np.random.seed(seed)


def lstm(keras=tf_keras):
    x = keras.Input((STEPS, FEATURES), batch_size=1)
    h = keras.layers.LSTM(UNITS)(x)
    return keras.Model(x, keras.layers.Dense(3, activation="softmax")(h))


def bilstm():
    x = tf_keras.Input((STEPS, FEATURES), batch_size=1)
    h = tf_keras.layers.Bidirectional(tf_keras.layers.LSTM(UNITS, return_sequences=True))(x)
    h = tf_keras.layers.LSTM(UNITS)(h)
    return tf_keras.Model(x, tf_keras.layers.Dense(3)(h))


def lstm_while():
    return lstm(tf.keras)


def gru():
    x = tf.keras.Input((STEPS, FEATURES), batch_size=1)
    h = tf.keras.layers.GRU(UNITS)(x)
    return tf.keras.Model(x, tf.keras.layers.Dense(3)(h))


class _Cond(tf.Module):
    def __init__(self) -> None:
        rng = np.random.default_rng(3)
        self.w = tf.constant(rng.standard_normal((FEATURES, UNITS)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec((1, FEATURES), tf.float32)])
    def __call__(self, x):
        return tf.cond(tf.reduce_sum(x) > 0.0,
                       lambda: tf.nn.relu(tf.matmul(x, self.w)),
                       lambda: tf.tanh(tf.matmul(x, self.w)) * 2.0)


class _Stateful(tf.Module):
    def __init__(self) -> None:
        self.total = tf.Variable(np.linspace(-1, 1, FEATURES, dtype=np.float32)[None])

    @tf.function(input_signature=[tf.TensorSpec((1, FEATURES), tf.float32)])
    def __call__(self, x):
        self.total.assign_add(x)
        return tf.tanh(self.total) * 2.0


def stacked():
    x = tf.keras.Input((STEPS, FEATURES), batch_size=1)
    h = tf.keras.layers.GRU(UNITS, return_sequences=True)(x)
    h = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(UNITS // 2, return_sequences=True))(h)
    h = tf.keras.layers.SimpleRNN(UNITS)(h)
    return tf.keras.Model(x, tf.keras.layers.Dense(3)(h))


def _convert(converter: tf.lite.TFLiteConverter, variant: str) -> bytes:
    if variant:
        converter.optimizations = [tf.lite.Optimize.DEFAULT]
    if variant == "_f16":
        converter.target_spec.supported_types = [tf.float16]
    return converter.convert()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    builds = (("lstm", lstm), ("bilstm", bilstm), ("lstm_while", lstm_while), ("gru", gru), ("stacked", stacked))
    for seed, (name, build) in enumerate(builds):
        _seeded(seed)
        model = build()
        for variant in ("", "_dynamic", "_f16"):
            data = _convert(tf.lite.TFLiteConverter.from_keras_model(model), variant)
            (out / f"{name}{variant}.tflite").write_bytes(data)
    for name, module in (("cond", _Cond()), ("stateful", _Stateful())):
        conv = tf.lite.TFLiteConverter.from_concrete_functions([module.__call__.get_concrete_function()], module)
        conv.experimental_enable_resource_variables = True
        (out / f"{name}.tflite").write_bytes(conv.convert())


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[1] / "tests/data/rnn")
