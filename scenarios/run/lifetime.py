"""A child process that dies with its parent, however the parent dies.

A ``finally`` in the parent never runs when it is killed (SIGKILL, the out-of-memory killer, ``pkill``), and a
child blocked on its work queue then waits forever, holding its memory: the pool workers of
scenarios/run/sweep.py (a model each, over a gigabyte) and the servers the tests start. So the child asks the
kernel for a signal when its parent exits (Linux ``prctl(PR_SET_PDEATHSIG)``), and checks that the parent is
still the one that started it, since it may have died before the request was made. The signal comes when the
*thread* that started the child exits: start children from a thread that outlives them (the main thread).

On systems without ``prctl`` a daemon thread polls the parent's id instead, once a second.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading
import time

PR_SET_PDEATHSIG = 1  # linux/prctl.h
_LIBC = ctypes.CDLL(None, use_errno=True) if sys.platform.startswith("linux") else None
"""Loaded at import, in the parent: a ``preexec_fn`` runs between fork and exec, where loading a library could
wait on a lock another thread of the parent held at the fork."""


def die_with_parent(parent: int, signum: int = signal.SIGTERM) -> None:
    """Called in the child: from now on, the child gets ``signum`` when process ``parent`` (its parent when it
    was started) exits; if it already has, at once."""
    if _LIBC is not None:
        if _LIBC.prctl(PR_SET_PDEATHSIG, int(signum), 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG) failed")
    else:
        threading.Thread(target=_watch, args=(parent, signum), daemon=True, name="die-with-parent").start()
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def _watch(parent: int, signum: int) -> None:
    while os.getppid() == parent:
        time.sleep(1.0)
    os.kill(os.getpid(), signum)
