"""docs/guides/extending.md's worked toy objective, read from the page and run: registered by its file name
alone, its settings checked, its loss moving each step in its advantage's direction."""

import re
import sys
from pathlib import Path

import pytest
import torch

from agents.named import Registry
from agents.objectives.batch import PolicyBatch

PAGE = Path(__file__).resolve().parents[2] / "docs" / "guides" / "extending.md"


def example(path: str) -> str:
    """The code block under ``<!-- example: path -->`` on the page."""
    found = re.search(rf"<!-- example: {re.escape(path)} -->\n```python\n(.*?)```", PAGE.read_text(), re.S)
    assert found, f"no example {path} on {PAGE}"
    return found.group(1)


@pytest.fixture
def objectives(tmp_path, monkeypatch):
    """A package holding only the page's objective file, registered as agents/objectives is."""
    package = tmp_path / "toy_objectives"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "signed.py").write_text(example("agents/objectives/signed.py"))
    monkeypatch.syspath_prepend(str(tmp_path))
    yield Registry("toy_objectives", "objective")
    for name in [m for m in sys.modules if m.startswith("toy_objectives")]:
        del sys.modules[name]


def test_the_toy_objective_is_registered_by_its_file_alone(objectives):
    assert objectives.names == ("signed",) and objectives.needs("signed") == ()
    assert objectives.config("signed", scale=2.0).scale == 2.0
    with pytest.raises(KeyError, match="no setting scal"):
        objectives.config("signed", scal=2.0)
    with pytest.raises(ValueError, match="scale"):
        objectives.config("signed", scale=-1.0)


def test_the_toy_objective_moves_each_step_by_its_advantages_sign(objectives):
    logp = torch.log(torch.tensor([0.5, 0.5, 0.2])).requires_grad_()
    batch = PolicyBatch.one_token(logp=logp, old_logp=logp.detach(), advantage=torch.tensor([3.0, -0.1, 0.0]),
                                  outcome=torch.tensor([1.0, 0.0, 0.0]), group=torch.zeros(3, dtype=torch.long),
                                  episode=torch.arange(3), entropy=torch.zeros(3))
    value, stats = objectives.module("signed").loss(batch, objectives.config("signed", scale=2.0))
    value.backward()
    # d L / d logp_m = -scale x sign(A_m) / M: only the sign counts, a zero advantage moves nothing
    torch.testing.assert_close(logp.grad, torch.tensor([-2.0, 2.0, 0.0]) / 3)
    assert stats["policy_loss"] == pytest.approx(float(value.detach()))
