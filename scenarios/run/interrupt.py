"""Ctrl-C and SIGTERM for ``catallax run`` / ``resume``: finish the round, checkpoint, exit 130 / 143.

A signal that comes before the run has its row (while the model is built, an LLM server
contacted) ends the command at once, exit 130 / 143: nothing is written yet, so there is
nothing to save, and waiting would hold the signal off for as long as a server is retried.
After that a signal does not cut the run off where it is: the handler only records it,
the runner finishes the round it is in (its database write included), writes a
checkpoint and raises :class:`Interrupted`, and the command says how to
resume. A second signal acts as the first would without us (Ctrl-C raises
KeyboardInterrupt): the write in flight rolls back, and resume starts from
the last checkpoint, as after a kill.
"""

from __future__ import annotations

import signal
import sys

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(Exception):
    """The run stopped at a round boundary on a signal; it is checkpointed and resumable."""

    def __init__(self, run_id: str, signum: int):
        super().__init__(f"interrupted; resume with `catallax resume {run_id}`")
        self.run_id, self.signum = run_id, signum

    @property
    def exit_code(self) -> int:
        return 128 + self.signum  # what a shell reports for a process the signal killed: 130, 143


class Stop:
    """Catches SIGINT/SIGTERM while the ``with`` block runs; the runner reads :attr:`signum` between rounds.

    The block's :class:`Interrupted` is printed (how to resume) and kept in :attr:`interrupted`, for the
    command's exit code."""

    def __init__(self):
        self.signum: int | None = None
        self.interrupted: Interrupted | None = None
        self.run_id: str | None = None
        self._previous = {}

    def __enter__(self) -> Stop:
        for signum in SIGNALS:
            self._previous[signum] = signal.signal(signum, self._caught)
        return self

    def __exit__(self, _type, err, _tb) -> bool:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)
        if isinstance(err, Interrupted):
            print(err, file=sys.stderr)
            self.interrupted = err
            return True
        return False

    def _caught(self, signum, _frame) -> None:
        self.signum = signum
        for s, handler in self._previous.items():  # a second signal: as without us
            signal.signal(s, handler)
        if self.run_id is None:  # no row yet: nothing to checkpoint, so no reason to wait
            print(f"catallax: {signal.Signals(signum).name} before the run started; nothing was written",
                  file=sys.stderr)
            raise SystemExit(128 + signum)

    def started(self, run_id: str) -> None:
        """The run has its row: say how to come back to it; a signal from now on checkpoints and stops."""
        self.run_id = run_id
        print(f"run {run_id}: resume with `catallax resume {run_id}`", file=sys.stderr, flush=True)
