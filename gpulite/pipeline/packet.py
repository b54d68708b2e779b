"""Packets: an immutable payload stamped with an integer timestamp.

Timestamps are plain ``int`` (MediaPipe uses microseconds; any increasing integers work).
Each stream carries strictly increasing timestamps. A stream's *bound* is the smallest
timestamp a future packet on it may still have; :data:`DONE` means the stream is closed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import numpy as np

#: Bound of a closed stream: no packet will ever come. Larger than every valid timestamp.
DONE: Final[int] = 2**63 - 1
#: Bound of a stream before anything happened on it. Smaller than every valid timestamp.
UNSTARTED: Final[int] = -(2**63)


@dataclass(frozen=True, slots=True)
class Packet:
    """One payload at one timestamp.

    Parameters
    ----------
    payload
        Any object. Receivers must not mutate it: the same payload may reach several nodes.
    timestamp
        Integer timestamp, strictly between ``UNSTARTED`` and ``DONE``.
    """

    payload: Any
    timestamp: int


def check_timestamp(timestamp: object, what: str) -> int:
    """Return ``timestamp`` as an ``int`` or raise ``TypeError``/``ValueError`` naming ``what``."""
    if isinstance(timestamp, np.integer):
        timestamp = int(timestamp)
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise TypeError(f"{what}: timestamp must be an int, got {type(timestamp).__name__} {timestamp!r}")
    if not UNSTARTED < timestamp < DONE:
        raise ValueError(f"{what}: timestamp must be in ({UNSTARTED}, {DONE}), got {timestamp}")
    return timestamp
