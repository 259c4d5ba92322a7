"""Model loading follows the run's progress-bar rule: transformers' "Loading weights" bar is drawn on a terminal and
never into a piped stderr (where its ``\\r`` frames are noise in a log)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

LOAD_TWICE = r'''
import fcntl, os, pty, struct, sys, termios, threading
from agents.backends import BackendConfig
from agents.backends.hf import HFBackend

HFBackend(BackendConfig(backend="hf", device="cpu"))  # stderr: the test's pipe
master, slave = pty.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))  # 80 columns (a new pty has 0: no bar)
drawn = []


def drain():
    try:
        while chunk := os.read(master, 4096):
            drawn.append(chunk)
    except OSError:  # the terminal's other end closed
        pass


reader = threading.Thread(target=drain, daemon=True)
reader.start()
piped, sys.stderr = sys.stderr, open(slave, "w")  # now a terminal
HFBackend(BackendConfig(backend="hf", device="cpu", max_batch=2))  # another config: loaded again
terminal, sys.stderr = sys.stderr, piped
terminal.close()
reader.join(timeout=10)
print("on the terminal:", b"Loading weights" in b"".join(drawn))
'''


def test_loading_bars_are_drawn_on_a_terminal_only():
    done = subprocess.run([sys.executable, "-c", LOAD_TWICE], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "Loading weights" not in done.stderr
    assert done.stdout.strip().endswith("on the terminal: True")
