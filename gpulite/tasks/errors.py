"""The errors of gpulite's MediaPipe Tasks: each is the exception type MediaPipe 1.2.2 raises for
the same mistake (a ``ValueError`` for a call in the wrong running mode, ...) and a
:class:`~gpulite.GpuliteError`.

The asset errors (a missing file, an unreadable bundle) are in :mod:`gpulite.tasks.bundle`.
"""

from gpulite.errors import GpuliteError


class RunningModeError(GpuliteError, ValueError):
    """A call that does not match the task's running mode, or a ``result_callback`` given or missing
    against it (MediaPipe: ``ValueError``, "Task is not initialized with the video mode...")."""


class InputTimestampError(GpuliteError, ValueError):
    """A VIDEO or LIVE_STREAM timestamp not after the previous one (MediaPipe: ``ValueError``,
    "Input timestamp must be monotonically increasing.")."""


class ImageFormatError(GpuliteError, ValueError, RuntimeError):
    """An image the task cannot take, or data that does not fit its ``ImageFormat``.

    MediaPipe raises a ``ValueError`` for some (float data, a float image given to a vision task)
    and a ``RuntimeError`` for others (a GRAY8 image given to a task that needs RGB, from its
    graph), so this is both.
    """


class TaskClosedError(GpuliteError, ValueError):
    """A call on a task after ``close()`` (MediaPipe: ``ValueError``, "Task runner is currently not running.")."""


class ImageDecodeError(GpuliteError, RuntimeError):
    """``Image.create_from_file`` on a file that is not an image it can decode (MediaPipe: ``RuntimeError``)."""


class TaskUnimplementedError(GpuliteError, NotImplementedError):
    """Something MediaPipe does not implement either (per-channel normalization), or an option gpulite's
    task does not implement yet (an image rotation for the landmarkers)."""
