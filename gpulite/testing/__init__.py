"""Test helpers: :mod:`gpulite.testing.tflite_writer` writes small .tflite models (a re-export of
:mod:`gpulite.model.writer`, which needs only ``flatbuffers``)."""
