"""A checkpoint is read within the bytes it holds: a member that inflates to gigabytes (a zip bomb) is refused
before it is inflated, whether the state refers to it or not, and so is an array whose header declares more
than its bytes; a real checkpoint still round-trips."""

import io
import sqlite3
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest

from market.checkpoint import FORMAT, MAGIC, CheckpointError, decode, encode
from scenarios.run.config import load
from scenarios.run.runner import run_experiment

CATALLAX = Path(sys.executable).parent / "catallax"
CHUNK = 2**24  # bytes of zeros per deflate block
PEAK_LIMIT = 300 * 2**20


class _Blocks:
    """A deflate stream of zeros made from one precompressed block, repeated: a 2 GiB member in a couple of
    MB, in a fraction of a second (each block ends in a full flush, so every one after the first is the same)."""

    def __init__(self):
        c = zlib.compressobj(9, zlib.DEFLATED, -15)
        self.first = c.compress(bytes(CHUNK)) + c.flush(zlib.Z_FULL_FLUSH)
        self.next = c.compress(bytes(CHUNK)) + c.flush(zlib.Z_FULL_FLUSH)
        self.end = c.flush()
        self.calls = 0

    def compress(self, _data):
        self.calls += 1
        return self.first if self.calls == 1 else self.next

    def flush(self):
        return self.end


def with_bomb(checkpoint: bytes, name: str, gib: int = 2) -> bytes:
    """``checkpoint`` with a member ``name`` holding ``gib`` GiB of deflated zeros (CRC and sizes true)."""
    buf = io.BytesIO(checkpoint[len(MAGIC) + 2:])
    with zipfile.ZipFile(buf, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        with archive.open(name, "w", force_zip64=True) as member:
            member._compressor = _Blocks()  # the attacker's deflater: the same bytes zlib makes, made once
            zeros = bytes(CHUNK)
            for _ in range(gib * 2**30 // CHUNK):
                member.write(zeros)
    return checkpoint[:len(MAGIC) + 2] + buf.getvalue()


def test_the_bomb_is_what_it_claims():
    bomb = with_bomb(encode({"x": np.arange(3)}), "junk.npy", gib=1)
    assert len(bomb) < 2**21
    with zipfile.ZipFile(io.BytesIO(bomb[len(MAGIC) + 2:])) as archive:
        info = archive.getinfo("junk.npy")
        assert info.file_size == 2**30 and info.compress_type == zipfile.ZIP_DEFLATED
        with archive.open(info) as f:  # it really inflates to zeros
            assert f.read(CHUNK + 5) == bytes(CHUNK + 5)


@pytest.mark.parametrize("name", ["a0.npy", "junk.npy"])  # a member the state uses, one nothing uses
def test_a_member_bomb_is_refused_before_it_inflates(name):
    state = {"w": np.arange(6, dtype=np.int64).reshape(2, 3), "t": (1, 2.5)}
    data = encode(state)
    decoded = decode(data)
    assert decoded["t"] == (1, 2.5) and np.array_equal(decoded["w"], state["w"])
    if name == "a0.npy":
        data = data.replace(b"a0.npy", b"zz.npy")  # the real a0 renamed: the bomb takes its place
    with pytest.raises(CheckpointError, match="declare"):
        decode(with_bomb(data, name, gib=1))


def archive(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as z:
        for name, raw in members.items():
            z.writestr(name, raw)
    return MAGIC + FORMAT.to_bytes(2, "big") + buf.getvalue()


def npy(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, a)
    return buf.getvalue()


def test_an_array_header_larger_than_its_bytes_is_refused():
    state = npy(np.frombuffer(b'{"~":"ndarray","i":0}', dtype=np.uint8))
    assert decode(archive({"state.npy": state, "a0.npy": npy(np.zeros(4))})).shape == (4,)
    lying = npy(np.zeros(4)).replace(b"'shape': (4,), }" + b" " * 9, b"'shape': (4000000000,), }")
    with pytest.raises(CheckpointError, match="does not match its bytes"):
        decode(archive({"state.npy": state, "a0.npy": lying}))
    with pytest.raises(CheckpointError, match="referred to twice"):
        decode(archive({"state.npy": npy(np.frombuffer(b'[{"~":"ndarray","i":0},{"~":"ndarray","i":0}]',
                                                        dtype=np.uint8)), "a0.npy": npy(np.zeros(4))}))


def test_resume_of_a_checkpoint_with_a_2_gib_member_exits_2_within_300_mb(tmp_path):
    db = tmp_path / "catallax.db"
    run_id = run_experiment(load("relay", ["run.episodes=30"]), f"sqlite:///{db}", progress=False)["run_id"]
    conn = sqlite3.connect(db)
    with conn:
        [(state,)] = conn.execute("SELECT state FROM checkpoint").fetchall()
        conn.execute("UPDATE checkpoint SET state = ?", (with_bomb(state, "junk.npy", gib=2),))
        conn.execute("UPDATE run SET status = 'running'")
    conn.close()
    measure = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], capture_output=True, text=True); "
               "sys.stderr.write(p.stderr); print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
               "sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", measure, str(CATALLAX), "resume", run_id, "--db", f"sqlite:///{db}"],
                          capture_output=True, text=True, timeout=300, check=False)
    peak = int(proc.stdout.split()[-1]) * 1024
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"catallax: error: checkpoint of run {run_id}: ") and "declare" in line, line
    assert peak < PEAK_LIMIT, f"peak {peak / 2**20:.0f} MiB"
