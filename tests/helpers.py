"""Shared helpers: a toy relay economy and the ledger's invariants, checked from the outside."""

import numpy as np

from market import MarketConfig, MarketModel, PopulationConfig, replay
from market.ledger import TRANSFER_DTYPE
from scenarios import relay


def relay_model(market=None, population=None, stages=3, seed=0) -> MarketModel:
    """A MarketModel over a small relay world with the rule policy."""
    world, policy = relay.build(relay.Config(stages=stages))
    market = market or MarketConfig()
    population = population or PopulationConfig(initial_agents=8, max_agents=16)
    return MarketModel(world, policy, market, population, seed=seed)


class Books:
    """Accumulates a model's flushed transfers round by round and checks the invariants after each."""

    def __init__(self):
        self.log = np.empty(0, dtype=TRANSFER_DTYPE)
        self.dead: set[int] = set()  # account ids that died in an earlier round

    def add(self, transfers: np.ndarray, deaths: list[dict]) -> None:
        assert transfers.dtype == TRANSFER_DTYPE
        assert (transfers["amount"] > 0).all(), "zero or negative amount in the log"
        touched = set(transfers["src"].tolist()) | set(transfers["dst"].tolist())
        assert not touched & self.dead, f"transfer touches dead accounts {touched & self.dead}"
        self.log = np.concatenate([self.log, transfers])
        self.dead |= {d["agent_id"] for d in deaths}

    def check(self, pop) -> None:
        assert int(pop.wealth.sum()) == 0, "accounts do not sum to zero"
        assert int(pop.wealth[~pop.alive].sum()) == 0, "a dead row holds money"
        balances = replay(self.log) if self.log.size else {}
        live = np.flatnonzero(pop.alive)
        expected = dict(zip(pop.ids[live].tolist(), pop.wealth[live].tolist()))
        for account, balance in balances.items():
            assert balance == expected.get(account, 0), f"account {account}: replay {balance} != {expected.get(account, 0)}"
        for account, balance in expected.items():
            assert balances.get(account, 0) == balance, f"account {account} missing from the replay"
        assert self.dead.isdisjoint(expected), "a dead account id is alive again"


def step_and_check(model: MarketModel, books: Books) -> None:
    model.step()
    books.add(model.last_round.transfers, model.last_round.deaths)
    books.check(model.population)




def error_line(capsys, argv) -> str:
    """Run the CLI on ``argv``, which must fail as bad input does: exit 2, one line on stderr, nothing on stdout."""
    import pytest

    from scenarios.cli.main import main

    with pytest.raises(SystemExit) as exit_:
        main(argv)
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert exit_.value.code == 2 and len(lines) == 1 and captured.out == "", captured
    return lines[0].removeprefix("catallax: error: ")


def assert_gradients_match_finite_differences(loss_fn, params, grads, h: float = 1e-6) -> None:
    """Each entry of ``grads`` (autograd's, for ``params``) equals the central difference of ``loss_fn()``."""
    import pytest

    for p, g in zip(params, grads):
        flat, gflat = p.data.view(-1), g.reshape(-1)  # .data: perturbed outside autograd
        for i in range(flat.numel()):
            old = flat[i].item()
            flat[i] = old + h
            up = loss_fn().item()
            flat[i] = old - h
            down = loss_fn().item()
            flat[i] = old
            assert gflat[i].item() == pytest.approx((up - down) / (2 * h), rel=1e-5, abs=1e-8)


def verdict_asks():
    """Five of the diagnoser's wordmath-shaped cases (experiments/skill_evolution.py) as the prompts wordmath's edit
    pass sends, with each case's closed set of well-formed verdicts: what a backend's ``choose`` is asked."""
    from experiments.skill_evolution import verdict_cases
    from scenarios.wordmath import PROMPTS
    from skills.editor import LLMDiagnoser, verdicts

    cases = verdict_cases(5, seed=0)
    ask = LLMDiagnoser(None, short=True).short_prompt
    return [PROMPTS.diagnosis(ask(c)) for c in cases], [verdicts(c) for c in cases]
