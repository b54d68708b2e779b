"""Test helpers: :mod:`gpulite.testing.tflite_writer` writes small .tflite models.

Nothing here is imported by the runtime; the writer needs ``ai-edge-litert`` (for the
official schema's builder functions), which is a test-only dependency.
"""
