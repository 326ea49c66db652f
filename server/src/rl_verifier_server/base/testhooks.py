"""Pause points for crash and timing tests; they do nothing unless their variables are set.

With ``RLV_SERVE_TEST_PAUSE=POINT`` (or ``POINT@SUBJECT``) the server, on reaching that
point (for that subject, e.g. a checkpoint name), writes the point's name to the file
``RLV_SERVE_TEST_PAUSE_FILE`` and stops there for good, so a test can SIGKILL it at a
known moment instead of sleeping and hoping. Points: ``optim_step`` (inside a step),
``checkpoint.write`` (adapter weights written, the rest not yet), ``save_state.swap``
(overwriting: the old checkpoint moved aside, the new one not yet in place).

With ``RLV_SERVE_TEST_SLOW=POINT=SECONDS`` the server spends that many extra seconds at
the point (a deliberately slow step), and ``RLV_SERVE_TEST_LONG_POLL_S`` shortens the long
poll of ``retrieve_future``, so a test sees a step outlast a poll without waiting 30 s.

``wall_clock`` is the time checkpoint expiry is judged by: now, shifted by the number of
seconds in the file ``RLV_SERVE_TEST_CLOCK_FILE`` when that variable is set, so a test can
let a checkpoint's TTL run out without waiting for it.
"""

from __future__ import annotations

import contextlib
import os
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from rl_verifier.internal import write_text

PAUSE_VARIABLE = "RLV_SERVE_TEST_PAUSE"
SIGNAL_FILE_VARIABLE = "RLV_SERVE_TEST_PAUSE_FILE"
CLOCK_FILE_VARIABLE = "RLV_SERVE_TEST_CLOCK_FILE"
SLOW_VARIABLE = "RLV_SERVE_TEST_SLOW"
LONG_POLL_VARIABLE = "RLV_SERVE_TEST_LONG_POLL_S"


def pause_point(point: str, subject: str = "") -> None:
    slow, _, seconds = os.environ.get(SLOW_VARIABLE, "").partition("=")
    if slow == point:
        time.sleep(float(seconds))
    spec = os.environ.get(PAUSE_VARIABLE)
    if not spec:
        return
    wanted, _, wanted_subject = spec.partition("@")
    if wanted != point or (wanted_subject and wanted_subject != subject):
        return
    signal_file = os.environ.get(SIGNAL_FILE_VARIABLE)
    if signal_file:
        write_text(Path(signal_file), point)
    while True:
        time.sleep(3600)


def wall_clock() -> datetime:
    now = datetime.now(UTC)
    shift_file = os.environ.get(CLOCK_FILE_VARIABLE)
    if shift_file:
        with contextlib.suppress(OSError, ValueError):
            now += timedelta(seconds=float(Path(shift_file).read_text()))
    return now


def long_poll_s(default: float) -> float:
    """How long ``retrieve_future`` holds a pending request: ``default`` unless a test set
    ``RLV_SERVE_TEST_LONG_POLL_S``."""
    return float(os.environ.get(LONG_POLL_VARIABLE) or default)
