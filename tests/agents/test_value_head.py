"""Value heads (``agents.bid_objective = "value"``): targets are the ledger's flows, the step is the
normalised least-squares one it claims to be, and a market of value bidders routes work by itself.

The routing test is a real market (MarketModel, softmax clearing, the learner in the loop): four
agents are always awake, agent k can only solve region k, and nothing tells the heads which is which
but what each turn earned. After training, in every region the agent that solves it must predict the
highest value, and the market's success must have risen from chance (1/4) to near 1.
"""

import json
import subprocess
import sys

import numpy as np
import pytest
import torch

from agents import RulePolicy
from agents.learners.bid_head import BidHead
from agents.config import AgentsConfig, ValueBidsConfig
from agents.credit.advantages import turn_earnings
from agents.learners.policy import LearnedPolicy
from agents.learners.value_bids import value_loss
from market import MarketConfig, MarketModel, PopulationConfig
from market.ledger import Reason
from market.money import MICRO
from scenarios.run.config import ConfigError, load
from scenarios.run.runner import build_model
from tests.agents.test_bid_head import RoutingWorld
from tests.helpers import assert_gradients_match_finite_differences


@pytest.mark.parametrize("overrides", [
    [],
    ["market.terminal=path", "market.action_fee=0.003"],
    ["market.payment=final_only"],
    ["market.clearing=second_price"],
])
def test_value_targets_sum_to_each_agents_ledger_flows(overrides):
    """Summed over an agent's turns of a round, the regression targets are exactly what the ledger
    paid it for the world (BID in) and as reward (REWARD in), less the fees it paid (FEE out)."""
    exp = load("relay", ["market.bid_scheme=learned", "market.batch=4", "population.initial_agents=12", *overrides])
    model = build_model(exp)
    checked = 0
    for _ in range(12):
        model.step()
        agents, _, _, earned = turn_earnings(model.trace)
        transfers = model.last_round.transfers
        for row in np.unique(agents):
            account = model.population.ids[row]
            into = np.isin(transfers["reason"], [Reason.BID, Reason.REWARD]) & (transfers["dst"] == account)
            fees = (transfers["reason"] == Reason.FEE) & (transfers["src"] == account)
            ledger = int(transfers["amount"][into].sum() - transfers["amount"][fees].sum())
            assert round(earned[agents == row].sum() * MICRO) == ledger, (row, overrides)
            checked += 1
    assert checked >= 10


def test_value_loss_gradient_matches_finite_differences():
    torch.manual_seed(0)
    head = BidHead(in_dim=5, cfg=AgentsConfig(dim=3), capacity=6).double()
    with torch.no_grad():
        head.row.normal_(), head.bias.normal_()
    phi = torch.randn(9, 5, dtype=torch.float64)
    agents = torch.tensor([1, 2, 2, 3, 5, 5, 5, 1, 4])
    target = 3 * torch.randn(9, dtype=torch.float64)  # some errors past Huber's delta: its linear part too
    share = torch.rand(9, dtype=torch.float64)

    def loss_fn():
        return value_loss(head, phi, agents, target, share, delta=1.0)[0]

    grads = torch.autograd.grad(loss_fn(), [head.row, head.bias])
    assert_gradients_match_finite_differences(loss_fn, [head.row, head.bias], grads)
    assert grads[0][0].abs().sum() == 0 and grads[0][1:].abs().sum() > 0  # row 0 took no turn: no gradient


def test_one_step_moves_each_agents_value_to_its_running_mean():
    """With ``agent`` features the value is a per-agent running estimate: a newcomer's first turns
    replace its guess by their mean; past 1/value_rate turns it moves 1 - (1 - rate)^K of the way."""
    cfg = AgentsConfig(features="agent", value=ValueBidsConfig(rate=0.25))
    world = RoutingWorld(2)
    policy = LearnedPolicy(RulePolicy(world.space, ["always -> solve_0", "always -> solve_1"]), cfg, learned_bids=True)
    market = MarketModel(world, policy, MarketConfig(bid_scheme="learned", batch=4, rent=0.0),
                         PopulationConfig(initial_agents=2, initial_wealth=100.0, births=False), seed=0)
    policy.bid_learner.head.bias.data[1:3] = torch.tensor([0.4, 0.9])  # rows 1, 2: a newcomer and an agent of 10 turns
    policy.bid_learner.turns[1:3] = [0, 10]
    market.step()
    agents, _, _, earned = turn_earnings(market.trace)
    value = policy.bid_learner.head.bias.detach().double().cpu().numpy()
    for row, before, n in ((1, 0.4, 0), (2, 0.9, 10)):
        mine = earned[agents == row]
        if mine.size:
            share = 1.0 if n == 0 else 1 - 0.75 ** mine.size
            assert value[row] == pytest.approx(before + share * (mine.mean() - before), abs=1e-6)
    assert policy.bid_learner.turns.sum() == 10 + agents.size


def test_an_agent_that_predicts_a_loss_sits_out():
    world = RoutingWorld(2)
    policy = LearnedPolicy(RulePolicy(world.space, ["always -> solve_0", "always -> solve_1"]),
                           AgentsConfig(features="agent"), learned_bids=True)
    policy.resize(2)
    policy.bid_learner.head.bias.data = torch.tensor([-0.2, 0.3])
    obs = np.array([[0], [1]])
    assert policy.eligible(obs).tolist() == [[False, True], [False, True]]
    assert policy.bids(obs)[0].tolist() == pytest.approx([0.0, 0.98 * 0.3])  # (1 - bid_margin) x value


def test_value_heads_recover_a_planted_routing_rule():
    world = RoutingWorld(4)
    inner = RulePolicy(world.space, [f"always -> solve_{k}" for k in range(4)])
    policy = LearnedPolicy(inner, AgentsConfig(), seed=0, learned_bids=True)  # value bids on one-hot region features
    market = MarketConfig(batch=32, bid_scheme="learned", clearing="softmax", temperature=0.05, rent=0.0)  # it explores
    population = PopulationConfig(initial_agents=4, initial_wealth=1000.0, min_agents=0, max_agents=4, births=False)
    model = MarketModel(world, policy, market, population, seed=0)
    success = []
    for _ in range(40):
        model.step()
        success.append(model.last_success_rate)
    phi = torch.as_tensor(policy.bid_learner.features(np.arange(4)[:, None]), device=policy.bid_learner.head.row.device)
    value = policy.bid_learner.head.score(phi).detach().cpu().numpy()[:, 1:5]  # [region, agent] (row 0 is the house)
    specialty = inner.rules.action[1:5]  # agent at row k + 1 solves region specialty[k]
    assert (np.argmax(value, axis=1) == np.argsort(specialty)).all(), value
    assert success[0] < 0.6 and np.mean(success[-10:]) > 0.95, success


def test_learned_bids_run_on_defaults_and_refuse_the_other_objectives_keys():
    """``--set market.bid_scheme=learned`` alone runs (value bids need no groups) and brings softmax clearing and the
    scenario's own value-bid defaults unless the config sets the key (blocks' file sets first price); a key only
    the reinforce objective reads is refused, naming it; reinforce brings softmax and groups of 8 (and none of
    value bids' defaults)."""
    exp = load("relay", ["market.bid_scheme=learned"])
    assert exp.market.batch == 1 and exp.market.clearing == "softmax"
    assert load("relay", ["market.bid_scheme=learned", "market.clearing=first_price"]).market.clearing == "first_price"
    assert load("blocks", []).market.clearing == "first_price"
    assert exp.agents.value.margin == 0.3 != ValueBidsConfig().margin  # relay's SPEC.value_bids
    assert load("relay", ["market.bid_scheme=learned", "agents.value.margin=0.05"]).agents.value.margin == 0.05  # the user's
    assert load("blocks", []).agents.value.margin == ValueBidsConfig().margin
    with pytest.raises(ConfigError, match=r"agents.reinforce.advantage = 'local': not read: \[agents.reinforce\] is read "
                                          r"only by REINFORCE bids"):
        load("relay", ["market.bid_scheme=learned", "agents.reinforce.advantage=local"])
    with pytest.raises(ConfigError, match=r"agents.value.rate = 0.5: not read: \[agents.value\] is read only by value"):
        load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "agents.value.rate=0.5"])
    reinforce = load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce"])
    assert reinforce.market.clearing == "softmax" and reinforce.market.batch == 8
    assert reinforce.agents.value.margin == ValueBidsConfig().margin  # relay's value-bid margin is not imposed
    with pytest.raises(ConfigError, match="market.clearing = 'first_price'"):
        load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "market.clearing=first_price"])
    with pytest.raises(ConfigError, match="agents.group = 0"):
        load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "market.batch=1"])


@pytest.mark.parametrize("seed", [0, 1])
def test_the_headline_command_learns_relays_chain_on_its_defaults(tmp_path, seed):
    """``catallax run relay --set market.bid_scheme=learned`` and nothing else (softmax clearing, relay's margin, batch 1):
    the market's success over the last fifth of its 1000 episodes is near 1 (fixed bids on the same economy: 0.03,
    README "Bids compared")."""
    done = subprocess.run([sys.executable, "-m", "scenarios.cli.main", "run", "relay", "--json", "--seed", str(seed),
                           "--set", "market.bid_scheme=learned", "--out", str(tmp_path)],
                          capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = json.loads(done.stdout.strip().splitlines()[-1])
    assert summary["conservation_ok"] and summary["success_rate"] >= 0.95, summary


def test_a_value_bid_run_never_builds_a_torch_optimizer():
    """Building one imports torch._dynamo, 0.9 s of a 4 s relay run: value steps are written in place and the
    learner's Adam is built at first use, which a value-bid run over rule actions never reaches."""
    script = ("import sys; from scenarios.run.config import load; from scenarios.run.runner import build_model; "
              "m = build_model(load('relay', ['market.bid_scheme=learned', 'run.episodes=40'])); "
              "[m.step() for _ in range(40)]; assert m.policy.bid_learner.turns.sum() > 0; print('torch._dynamo' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "False"


def test_auto_keeps_a_value_bid_learner_on_the_cpu_where_cuda_is_present(monkeypatch):
    """Value steps have no gradient work for a GPU: on an H100 (2026-12-05) blocks' default run took 80 s on
    cuda against 50 s on its CPU, with another ledger hash (float32 sums in another order). Under ``auto`` a
    value-bid learner over rule actions stays on the CPU; gradient work still goes to cuda. These machines
    have no GPU, so a stand-in says there is one (``torch.cuda.is_available`` patched): nothing here
    allocates on it."""
    from agents.learners.base import pick_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert pick_device("auto").type == "cuda" and pick_device("auto", gradients=False).type == "cpu"
    assert pick_device("cuda", gradients=False).type == "cuda"  # named: kept
    world = RoutingWorld(2)
    policy = LearnedPolicy(RulePolicy(world.space, ["always -> solve_0", "always -> solve_1"]), AgentsConfig(), learned_bids=True)
    assert policy.device.type == "cpu" and policy.bid_learner.head.row.device.type == "cpu" and policy.action_learner is None
