"""The install lines the README, getting-started and the GPU how-to show "without make" are the Makefile's steps.

The Makefile's steps are read from make itself (``make -n -B setup``: every recipe line with its variables
expanded), so the check follows the Makefile as it is, not a copy of it. A page's block is the first ``bash``
block after its ``<!-- install: cpu -->`` or ``<!-- install: gpu -->`` marker; its ``pip`` lines, read as the shell
reads them (comments dropped), must be make's pip lines in the same order, ``--quiet`` aside.
"""

import os
import re
import shlex
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
PAGES = {"cpu": ["README.md", "docs/getting-started.md"], "gpu": ["docs/howto/gpu.md"]}
pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def pip_steps(lines: list[str]) -> list[list[str]]:
    """The pip commands among shell lines, as argument lists from ``pip`` on, ``--quiet`` dropped."""
    steps = []
    for line in lines:
        args = shlex.split(line, comments=True)
        if "pip" in args and "-m" in args:
            steps.append([a for a in args[args.index("pip"):] if a != "--quiet"])
    return steps


def make_steps(*assignments: str, env: dict | None = None) -> list[list[str]]:
    proc = subprocess.run(["make", "-n", "-B", "setup", *assignments], cwd=ROOT, capture_output=True, text=True,
                          env=env, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return pip_steps(proc.stdout.splitlines())


def page_steps(page: str, stack: str) -> list[list[str]]:
    text = (ROOT / page).read_text()
    marker = f"<!-- install: {stack} -->"
    assert marker in text, f"{page}: no {marker} before its install lines"
    block = re.search(r"^```bash\n(.*?)^```", text[text.index(marker):], re.S | re.M)
    assert block, f"{page}: no bash block after {marker}"
    return pip_steps(block.group(1).splitlines())


@pytest.mark.parametrize("stack,page", [(s, p) for s, pages in PAGES.items() for p in pages])
def test_a_page_shows_the_makefiles_install_steps(stack, page):
    """On a stock machine (no local torch wheel) make installs torch from the CPU index: the pages show that."""
    expected = make_steps(f"LLM={stack}", *([f"TORCH_INDEX={CPU_INDEX}"] if stack == "cpu" else []))
    assert len(expected) >= 5, expected
    assert page_steps(page, stack) == expected


def _stock_pip_env(find_links: str = "") -> dict:
    """pip with no configuration file and the given find-links: a stock machine, or one with a local wheelhouse."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    return {**env, "PIP_CONFIG_FILE": os.devnull, "PIP_FIND_LINKS": find_links, "PIP_NO_INPUT": "1"}


def _torch_line(steps: list[list[str]]) -> list[str]:
    return next(s for s in steps if "torch==2.13.0" in s)


def test_the_cpu_index_is_used_only_where_pip_offers_no_local_cpu_wheel(tmp_path):
    """Stock machine: no configuration, no wheelhouse -> torch from the CPU index. A wheelhouse that holds
    torch 2.13.0+cpu (here a minimal wheel of that name and version) -> no index asked, as on the project's
    machines, whose pip configuration carries the real wheel."""
    assert _torch_line(make_steps(env=_stock_pip_env())) == ["pip", "install", "torch==2.13.0", "--index-url", CPU_INDEX]
    wheel = tmp_path / "torch-2.13.0+cpu-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        info = "torch-2.13.0+cpu.dist-info"
        z.writestr(f"{info}/METADATA", "Metadata-Version: 2.1\nName: torch\nVersion: 2.13.0+cpu\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "")
    assert _torch_line(make_steps(env=_stock_pip_env(str(tmp_path)))) == ["pip", "install", "torch==2.13.0"]
    assert _torch_line(make_steps("LLM=gpu", env=_stock_pip_env())) == ["pip", "install", "torch==2.13.0"]


def test_an_unknown_stack_is_refused():
    proc = subprocess.run(["make", "-n", "setup", "LLM=tpu"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode != 0 and "LLM=tpu: expected cpu or gpu" in proc.stderr
