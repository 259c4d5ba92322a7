"""Kill -9 at many points of one run: 24 SIGKILLs at seeded random moments (stepping between checkpoints, encoding
one, committing) and inside writes (the store's fault injection holds the transaction open; each write is a
checkpoint with the rounds since the one before), each followed by `catallax resume`; after every kill the
database holds whole rounds up to the checkpoint, and the last resume ends with the uninterrupted run's ledger
hash and metrics."""

import json
import random
import subprocess
import time

import pytest

from scenarios.run.config import load
from scenarios.run.runner import run_experiment
from tests.scenarios.test_resume import CATALLAX, kill, kill_inside_write, same_as, start, wait_for_checkpoint_past, \
    whole_rounds
from tests.scenarios.test_resume import no_strays  # noqa: F401 (the fixture: no process outlives a test)

KILLS, EPISODES, EVERY = 24, 3000, 3


@pytest.mark.slow
def test_24_kills_at_random_points_and_inside_checkpoint_writes_resume_to_the_same_ledger(tmp_path):
    sets = [f"run.episodes={EPISODES}", f"run.checkpoint_every={EVERY}"]
    reference = run_experiment(load("relay", sets, seed=8), f"sqlite:///{tmp_path / 'ref.db'}", progress=False)
    url = f"sqlite:///{tmp_path / 'crash.db'}"
    rng = random.Random(25)
    kinds = []
    run_id, done = None, 0
    for k in range(KILLS):
        args = ("run", "relay", *sum((["--set", s] for s in sets), []), "--seed", "8") if run_id is None else \
            ("resume", run_id)
        kind = "moment" if k == 0 else rng.choice(["moment", "moment", "write"])
        if kind == "moment":  # a seeded moment after the process has checkpointed (stepping, encoding, committing)
            proc = start(*args, "--db", url)
            wait_for_checkpoint_past(url, done, proc)
            time.sleep(rng.uniform(0, 0.1))  # a few rounds at most: 24 kills must not reach the run's end
            kill(proc)
        else:  # a resumed process starts at a checkpoint, and its writes before the n-th hold EVERY rounds each
            n = rng.randint(1, 3)
            kill_inside_write(start(*args, "--db", url, fault=n))
            assert len(whole_rounds(url)["episodes"]) == done + (n - 1) * EVERY, "the hung write's rows must not be there"
        s = whole_rounds(url)
        [(run_id,)] = s["runs"]
        done = s["checkpoint"][0][0] if s["checkpoint"] else 0
        kinds.append(kind)
    assert len(kinds) == KILLS and "write" in kinds and done < EPISODES

    final = subprocess.run([str(CATALLAX), "resume", run_id, "--db", url, "--json"], capture_output=True, text=True,
                           timeout=120, check=False)
    assert final.returncode == 0, final.stderr
    same_as(json.loads(final.stdout.strip().splitlines()[-1]), reference, url)
