"""Jobs for the harness's tests, in a module of their own: a spawned worker imports only this (and numpy)."""

import os
import time

import numpy as np


def toy(arm: str, seed: int, wait_for: str = "", mark: str = "") -> dict:
    """A seeded draw and the process that made it; first the file ``mark`` is made, or the file ``wait_for``
    awaited (a job that can finish only after another one started: two processes are running)."""
    if mark:
        open(mark, "w").close()
    deadline = time.monotonic() + 60
    while wait_for and not os.path.exists(wait_for):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{wait_for} never appeared: the jobs did not run side by side")
        time.sleep(0.01)
    draw = float(np.random.default_rng([seed, len(arm)]).random())
    return {"arm": arm, "seed": seed, "draw": draw, "pid": os.getpid()}


def broken(seed: int) -> int:
    if seed == 2:
        raise ValueError(f"seed {seed} broke")
    return seed
