"""Checkpoints are data, never code (market/checkpoint.py): exact round trips of every scenario's state, and
a database whose checkpoint is a pickle, another format or garbage is refused in one line, exit 2, unread."""

import os
import pickle
import random
import sqlite3
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from market.checkpoint import FORMAT, MAGIC, CheckpointError, decode, encode
from scenarios.run.config import load
from scenarios.run.runner import build_model, run_experiment

CATALLAX = Path(sys.executable).parent / "catallax"


def same(a, b, path="state"):
    """Equal, and of the same types all the way down (a tuple stays a tuple, int64 stays int64)."""
    assert type(a) is type(b), (path, type(a), type(b))
    if isinstance(a, dict):
        assert list(a) == list(b), path
        for k in a:
            same(a[k], b[k], f"{path}[{k!r}]")
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}[{i}]")
    elif isinstance(a, (np.ndarray, np.generic)):
        assert a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes(), path
    elif isinstance(a, torch.Tensor):
        assert a.dtype == b.dtype and a.shape == b.shape and torch.equal(a, b), path
    elif isinstance(a, float) and a != a:
        assert b != b, path
    else:
        assert a == b, path


def test_every_kind_of_value_round_trips_exactly():
    state = {
        "random": random.Random(3).getstate(),  # (3, a 625-int tuple, None): random.setstate needs tuples
        "np_rng": np.random.default_rng(1).bit_generator.state, "mt": np.random.MT19937(2).state,
        "ints": np.arange(5, dtype=np.int64), "big": 2**100, "floats": [0.1, -0.0, float("inf"), float("nan"), 1e-310],
        "scalar": np.float64(0.3), "u8": np.uint8(7), "bools": np.array([True, False]),
        "records": np.zeros(2, dtype=[("src", "<i8"), ("amount", "<i8")]), "empty": np.zeros((0, 3), np.float32),
        "sets": {"a": {1, 2}, "b": frozenset({"x"})}, "int_keys": {0: "zero", (1, 2): [None, True]},
        "tag_key": {"~": "tuple", "v": []}, "text": "ünïcode\n",
        "tensors": [torch.randn(3, 2), torch.tensor(1.5), torch.arange(4), torch.get_rng_state(),
                    torch.randn(4, dtype=torch.bfloat16), torch.zeros(2, 2, dtype=torch.bool)],
    }
    same(state, decode(encode(state)))


def test_a_value_that_is_not_data_cannot_be_checkpointed():
    with pytest.raises(TypeError, match=r"state\.policy is a builtins\.builtin_function_or_method, not data"):
        encode({"policy": print})
    with pytest.raises(TypeError, match="object array"):
        encode({"a": np.array([None, 1], dtype=object)})


@pytest.mark.parametrize("scenario, sets", [
    ("relay", []), ("boltzmann", []), ("blocks", ["run.episodes=40"]),
    ("relay", ["market.bid_scheme=learned"]),
    ("relay", ["market.bid_scheme=learned", "market.batch=8", "agents.bid_objective=reinforce", 'agents.reinforce.advantage="local"',
               'agents.actions="grpo"']),
    ("recsys", ['recsys.mode="market"', "run.episodes=64", "recsys.world.users=300", "recsys.world.items=120"]),
], ids=["relay", "boltzmann", "blocks", "learned", "grpo", "recsys-market"])
def test_every_scenarios_state_round_trips_exactly(scenario, sets, tmp_path):
    """The real state dicts after a few rounds (Adam moments, torch and numpy RNGs, curricula, libraries)."""
    exp = load(scenario, sets, seed=1)
    model = build_model(exp)
    if scenario == "recsys":  # keeps its skill libraries in the run database
        from market.store import RunStore
        model.attach(RunStore.create(f"sqlite:///{tmp_path / 'r.db'}", scenario, 1, exp.to_dict()))
    for _ in range(3):
        model.step()
    state = model.state_dict()
    same(state, decode(encode(state)))


@pytest.mark.parametrize("data, says", [
    (b"", "not a catallax checkpoint"),
    (os.urandom(200), "not a catallax checkpoint"),
    (pickle.dumps({"episodes_done": 3}), "a pickled checkpoint from an older catallax, not loaded"),
    (MAGIC + (FORMAT + 1).to_bytes(2, "big") + b"whatever", f"format version {FORMAT + 1}, this catallax reads {FORMAT}"),
    (encode({"a": 1})[:-30], "a damaged catallax checkpoint"),
    (MAGIC + FORMAT.to_bytes(2, "big") + b"PK\x03\x04 not a zip", "a damaged catallax checkpoint"),
])
def test_bytes_that_are_not_a_checkpoint_are_refused(data, says):
    with pytest.raises(CheckpointError, match=says):
        decode(data)


class Payload:
    """Unpickling this runs ``touch MARKER``: what a database writer could put in a pickled checkpoint."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


@pytest.mark.parametrize("state, says", [
    ("pickle", "a pickled checkpoint from an older catallax, not loaded"),
    ("garbage", "not a catallax checkpoint"),
    ("future", f"checkpoint format version {FORMAT + 7}, this catallax reads {FORMAT}"),
])
def test_resume_of_a_planted_checkpoint_runs_nothing_and_exits_2(state, says, tmp_path):
    """A real run's checkpoint replaced by hand (sqlite3, as anyone with the file could): resume refuses it
    in one line, exit 2, and the malicious pickle's marker file is never made; the rows stay as they were."""
    db = tmp_path / "catallax.db"
    run_id = run_experiment(load("relay", ["run.episodes=30"]), f"sqlite:///{db}", progress=False)["run_id"]
    marker = tmp_path / "pwned"
    planted = {"pickle": pickle.dumps(Payload(marker)), "garbage": b"\x00garbage",
               "future": MAGIC + (FORMAT + 7).to_bytes(2, "big")}[state]
    conn = sqlite3.connect(db)  # and mark the run unfinished, so that resume reads the checkpoint
    with conn:
        conn.execute("UPDATE checkpoint SET state = ?", (planted,))
        conn.execute("UPDATE run SET status = 'running'")
    conn.close()  # the last connection: its WAL goes into the file
    before = db.read_bytes()
    proc = subprocess.run([str(CATALLAX), "resume", run_id, "--db", f"sqlite:///{db}"], capture_output=True,
                          text=True, timeout=120, check=False)
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"catallax: error: checkpoint of run {run_id}: ") and says in line
    assert not marker.exists()
    assert db.read_bytes() == before  # nothing deleted, no lease taken: the transaction rolled back
