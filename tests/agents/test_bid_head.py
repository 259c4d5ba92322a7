"""Bid heads trained by REINFORCE: the objective's gradient is right, and a head finds who should act where
(value heads: tests/agents/test_value_head.py).

The routing test is a real market (MarketModel, softmax clearing, the learner in the loop): four
agents are always awake, agent k can only solve region k, and nothing tells the heads which is
which but the episode's outcome. After training, in every region the agent that solves it must bid
highest, and the market's success rate must have risen from chance (1/4) to near 1.
"""

import numpy as np
import torch

from agents import RulePolicy, RuleSpace
from agents.learners.bid_head import BidHead, OneHotFeatures, TextFeatures
from agents.config import AgentsConfig, ReinforceBidsConfig
from agents.learners.policy import LearnedPolicy
from agents.learners.reinforce_bids import bid_objective
from market import MarketConfig, MarketModel, PopulationConfig
from market.protocols import World
from tests.helpers import assert_gradients_match_finite_differences


class RoutingWorld(World):
    """One step per episode: a random region 0..R-1 is shown; the winner solves it iff its action is that region."""

    horizon = 1

    def __init__(self, regions: int):
        self.regions = regions
        self.space = RuleSpace(("region",), (0,), (regions - 1,), tuple(f"solve_{r}" for r in range(regions)))

    def reset(self, batch, rng):
        self.region = rng.integers(self.regions, size=batch)
        self._solved = np.zeros(batch, dtype=bool)

    def observe(self):
        return self.region[:, None]

    def step(self, actions, acting):
        self._solved = acting & (actions == self.region)
        return self._solved.astype(float), np.ones(len(self.region), dtype=bool)

    @property
    def solved(self):
        return self._solved


def routing_market(regions=4, seed=0, entropy=0.01, **agents):
    world = RoutingWorld(regions)
    inner = RulePolicy(world.space, [f"always -> solve_{k}" for k in range(regions)])
    policy = LearnedPolicy(inner, AgentsConfig(bid_objective="reinforce", reinforce=ReinforceBidsConfig(entropy=entropy), **agents), seed=seed, learned_bids=True)
    market = MarketConfig(batch=32, clearing="softmax", bid_scheme="learned", rent=0.0, temperature=0.05)
    population = PopulationConfig(initial_agents=regions, initial_wealth=1000.0, min_agents=0, max_agents=regions,
                                  births=False)
    return MarketModel(world, policy, market, population, seed=seed), world


def test_bid_objective_gradient_matches_finite_differences():
    torch.manual_seed(0)
    cfg = AgentsConfig(dim=3, reinforce=ReinforceBidsConfig(scale=0.3))
    head = BidHead(in_dim=5, cfg=cfg, capacity=6).double()
    with torch.no_grad():
        head.row.normal_(), head.bias.normal_()
    phi = torch.randn(7, 5, dtype=torch.float64)
    eligible = torch.rand(7, 6) < 0.7
    eligible[:, :2] = True
    winner = torch.tensor([int(np.flatnonzero(e.numpy())[i % e.sum()]) for i, e in enumerate(eligible)])
    advantage = torch.randn(7, dtype=torch.float64)
    cap = torch.full((7, 6), 10.0, dtype=torch.float64)
    cap[0, 1] = 1e-3  # one capped bid: its gradient must be zero, as the min() says

    def loss_fn():
        bids = torch.minimum(head.bids(phi), cap)
        return bid_objective(bids, eligible, winner, advantage, temperature=0.2, entropy=0.05)[0]

    loss = loss_fn()
    params = [head.proj.weight, head.row, head.bias]
    grads = torch.autograd.grad(loss, params)
    assert_gradients_match_finite_differences(loss_fn, params, grads)
    assert any(g.abs().sum() > 0 for g in grads)


def test_one_hot_features_and_text_cache():
    phi = OneHotFeatures((0, 1), (2, 3))(np.array([[0, 1], [2, 3], [5, 0]]))
    assert phi.tolist() == [[1, 0, 0, 1, 0, 0], [0, 0, 1, 0, 0, 1], [0, 0, 1, 1, 0, 0]]  # clipped to bounds
    calls = []

    def encode(texts):
        calls.append(texts)
        return np.array([[len(t), 1.0] for t in texts])

    text = TextFeatures(("stage",), encode, 2)
    out = text(np.array([[1], [2], [1]]))
    assert calls == [["stage = 1", "stage = 2"]] and out.shape == (3, 2)
    text(np.array([[2], [3]]))
    assert calls[1] == ["stage = 3"]  # each distinct observation is encoded once


def test_learned_head_recovers_a_planted_routing_rule():
    model, world = routing_market(lr=0.1, entropy=0.0)
    phi = torch.as_tensor(model.policy.bid_learner.features(np.arange(4)[:, None]), device=model.policy.bid_learner.head.row.device)
    start = model.policy.bid_learner.head.bids(phi).detach().cpu().numpy()[:, 1:5]
    success = []
    for _ in range(60):
        model.step()
        success.append(model.last_success_rate)
    bids = model.policy.bid_learner.head.bids(phi).detach().cpu().numpy()[:, 1:5]  # [region, agent] (row 0 is the house)
    rows = np.flatnonzero(model.population.traders)
    specialty = model.policy.unwrapped.rules.action[rows]  # agent at row rows[k] solves region specialty[k]
    assert (np.argmax(bids, axis=1) == np.argsort(specialty)).all(), (start, bids)
    assert success[0] < 0.5 and np.mean(success[-10:]) > 0.9, success  # from chance (1/4) to routed


def test_minilm_features_run_offline_in_a_learning_market():
    """features = "minilm": the shipped all-MiniLM-L6-v2 embeds each distinct observation once (unit
    vectors, 384-d), a shared projection maps them to the rows, and the market trains on them."""
    from scenarios.run.config import load
    from scenarios.run.runner import build_model

    exp = load("relay", ["market.bid_scheme=learned", "agents.bid_objective=reinforce", "agents.features=minilm", "agents.dim=8",
                         "market.batch=4"])
    model = build_model(exp)
    before = model.policy.bid_learner.head.proj.weight.detach().clone()
    for _ in range(3):
        model.step()
    cache = model.policy.bid_learner.features.cache
    vectors = np.stack(list(cache.values()))
    assert 1 <= len(cache) <= exp.scenario.stages + 1 and vectors.shape[1] == 384  # stages 0..K
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-4)
    assert model.policy.bids(np.array([[0], [1]])).shape == (2, model.population.capacity)
    assert not torch.equal(before, model.policy.bid_learner.head.proj.weight)  # the projection is trained too


def test_rows_follow_births_and_growth_keeps_adam_state():
    """A child's row is its parent's plus small noise; growth pads Adam's moments; a recycled row's are zeroed."""
    model, world = routing_market(lr=0.1)
    policy, rng = model.policy, np.random.default_rng(0)
    for _ in range(3):
        model.step()
    head, opt = policy.bid_learner.head, policy.adam.opt
    capacity = head.capacity
    assert opt.state[head.row]["exp_avg"].abs().sum() > 0
    policy.inherit(np.array([2]), np.array([1]), rng)
    delta = (head.row[2] - head.row[1]).detach().cpu().numpy()
    assert 0 < np.abs(delta).max() < 5 * policy.cfg.inherit_sigma
    assert opt.state[head.row]["exp_avg"][2].abs().sum() == 0  # the newborn's moments start fresh
    moments = opt.state[head.row]["exp_avg"].clone()
    policy.resize(capacity * 2)
    assert head.row.shape[0] == capacity * 2
    grown = opt.state[head.row]["exp_avg"]
    assert grown.shape == head.row.shape and torch.equal(grown[:capacity], moments) and grown[capacity:].abs().sum() == 0
    policy.adam.step(head.bids(torch.ones(1, head.row.shape[1], device=head.row.device)).sum())  # Adam steps the grown parameters
    assert opt.state[head.row]["exp_avg"][capacity:].abs().sum() > 0
