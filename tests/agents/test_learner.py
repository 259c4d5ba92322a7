"""The learner: bucket-brigade credit replays the ledger, GRPO moves what it should, resume is exact."""

import pickle

import numpy as np
import pytest
import torch

from agents import RulePolicy
from agents.config import ActionLogitsConfig, AgentsConfig
from agents.learners.policy import LearnedPolicy
from agents.credit.advantages import holding_profit, outcome_advantage
from agents.learners.hf_grpo import HFGRPO
from market import MarketConfig, MarketModel, PopulationConfig
from market.ledger import Reason
from scenarios.run.config import load
from scenarios.run.runner import build_model
from tests.agents.test_bid_head import RoutingWorld
from tests.agents.scoring import mean_logprob


def relay_learned(*overrides):
    exp = load("relay", ["market.bid_scheme=learned", "market.batch=8", "population.initial_agents=12", *overrides])
    return build_model(exp)


@pytest.mark.parametrize("overrides", [
    [],
    ["market.terminal=path", "market.action_fee=0.003"],
    ["market.conserve=false", "agents.bid_objective=reinforce", "agents.reinforce.advantage=local"],
    ["market.payment=final_only", "agents.bid_objective=reinforce"],
])
def test_bucket_brigade_profit_sums_to_each_agents_ledger_flows(overrides):
    model = relay_learned(*overrides)
    checked = 0
    for _ in range(8):
        model.step()
        trace, transfers = model.trace, model.last_round.transfers
        profit = holding_profit(trace)
        trading = np.isin(transfers["reason"], [Reason.BID, Reason.FEE, Reason.REWARD])
        for row in np.unique(trace.path[trace.path >= 0]):
            account = model.population.ids[row]
            flows = transfers[trading]
            net = flows["amount"][flows["dst"] == account].sum() - flows["amount"][flows["src"] == account].sum()
            assert profit[trace.path == row].sum() == net, (row, overrides)
            checked += 1
    assert checked >= 20


def test_outcome_advantage():
    a = outcome_advantage(np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0]), group=2, normalize=False)
    assert a.tolist() == [0.5, -0.5, 0.0, 0.0, 0.0, 0.0]  # equal groups: nothing to contrast
    z = outcome_advantage(np.array([3.0, 1.0, 2.0, 2.0]), group=AgentsConfig().group_size(4), normalize=True)
    assert z.sum() == pytest.approx(0) and z[0] == pytest.approx(1 / 0.7071, rel=1e-4)


def train_fixed_bids(world, policy, agents: int, rounds: int = 40):
    """``rounds`` rounds of 32 episodes with fixed bids (only the actions learn), ``agents`` rich agents, no births:
    the model and each round's success rate."""
    population = PopulationConfig(initial_agents=agents, initial_wealth=1000.0, min_agents=0, max_agents=agents,
                                  births=False)
    model = MarketModel(world, policy, MarketConfig(batch=32, rent=0.0, bid_scheme="fixed"), population, seed=1)
    success = []
    for _ in range(rounds):
        model.step()
        success.append(model.last_success_rate)
    return model, success


def test_grpo_teaches_rule_agents_the_right_action():
    """Agent k wakes in region k but its rule does the wrong thing (solve_{k+1}); GRPO on its action
    logits must find solve_k, from the episode outcome alone (bids fixed, so only actions learn)."""
    world = RoutingWorld(3)
    inner = RulePolicy(world.space, [f"region == {k} -> solve_{(k + 1) % 3}" for k in range(3)])
    policy = LearnedPolicy(inner, AgentsConfig(actions="grpo", lr=0.2, logits=ActionLogitsConfig(rule_logit=2.0)), seed=1)
    model, success = train_fixed_bids(world, policy, agents=3)
    rows = np.flatnonzero(model.population.traders)
    best = policy.action_learner.theta.detach().cpu().numpy()[rows].argmax(axis=1)
    wakes = policy.eligible(np.arange(3)[:, None])[:, rows].argmax(axis=0)  # the region each agent wakes in
    assert (best == wakes).all()
    assert success[0] < 0.3 and np.mean(success[-5:]) > 0.9, success


@pytest.mark.parametrize("per_state", [False, True])
def test_per_state_logits_let_one_rule_that_wakes_everywhere_learn_an_action_per_state(per_state):
    """One agent, ``always -> solve_0``, in a world of 3 regions: with one residual vector it can at best pick one
    action for every region (success about 1/3); with a residual per state (agents.logits.per_state) it learns
    solve_k in region k."""
    world = RoutingWorld(3)
    inner = RulePolicy(world.space, ["always -> solve_0"])
    cfg = AgentsConfig(actions="grpo", lr=0.2, logits=ActionLogitsConfig(rule_logit=1.0, per_state=per_state))
    policy = LearnedPolicy(inner, cfg, seed=1)
    model, success = train_fixed_bids(world, policy, agents=1)
    if per_state:
        row = np.flatnonzero(model.population.traders)
        phi = torch.eye(3)  # regions 0, 1, 2 one-hot: the numeric features
        logits = policy.action_learner.logits(np.repeat(row, 3), np.zeros(3, dtype=np.int64), phi)
        assert logits.argmax(1).tolist() == [0, 1, 2]
        assert np.mean(success[-5:]) > 0.9, success
    else:
        assert np.mean(success[-5:]) < 0.6, success


def test_resume_from_a_checkpoint_ends_with_the_same_ledger_hash():
    """Weights, Adam's moments and every RNG go into the checkpoint: stopping after 4 rounds and
    continuing in a fresh model gives the uninterrupted run's ledger, bit for bit."""
    overrides = ("agents.actions=grpo", "agents.bid_objective=reinforce", "agents.reinforce.advantage=local", "agents.lr=0.1")
    straight = relay_learned(*overrides)
    for _ in range(8):
        straight.step()

    first = relay_learned(*overrides)
    log = []
    for _ in range(4):
        first.step()
        log.append(first.last_round.transfers)
    state = pickle.loads(pickle.dumps(first.state_dict()))
    halfway = first.policy.bid_learner.head.row.detach().clone()
    resumed = relay_learned(*overrides)
    resumed.load_state_dict(state)
    resumed.ledger.restore(np.concatenate(log))
    for _ in range(4):
        resumed.step()

    assert resumed.ledger.hash == straight.ledger.hash
    assert torch.equal(resumed.policy.bid_learner.head.row, straight.policy.bid_learner.head.row)
    assert not torch.equal(resumed.policy.bid_learner.head.row[: halfway.shape[0]], halfway)  # it kept learning after the resume
    steps = [m.policy.adam.opt.state_dict()["state"][0]["step"] for m in (first, resumed, straight)]
    assert steps[0] < steps[1] == steps[2]  # Adam's state came along, and went on counting


def test_cuda_on_a_cpu_only_torch_is_refused_at_load():
    """agents.device = "cuda" without a GPU exits 2 naming the key, before anything is built."""
    from scenarios.run.config import ConfigError

    if torch.cuda.is_available():
        assert load("relay", ["market.bid_scheme=learned", "agents.device=cuda"]).agents.device == "cuda"
    else:
        with pytest.raises(ConfigError, match="agents.device = 'cuda'"):
            load("relay", ["market.bid_scheme=learned", "agents.device=cuda"])


def test_newborn_rows_reset_only_per_agent_moments():
    """A newborn takes a recycled row: its own rows' Adam moments restart, the shared projection's do not."""
    policy = LearnedPolicy(RulePolicy(RoutingWorld(3).space, ["always -> solve_0"]),
                           AgentsConfig(bid_objective="reinforce", features="numeric", dim=4), learned_bids=True)
    policy.resize(6)
    head = policy.bid_learner.head
    policy.adam.step(head.bids(torch.ones(2, 3, device=head.row.device)).sum())
    shared = policy.adam.opt.state[head.proj.weight]["exp_avg"].clone()
    policy.inherit(np.array([2]), np.array([1]), np.random.default_rng(0))
    assert policy.adam.opt.state[head.row]["exp_avg"][2].abs().sum() == 0
    assert torch.equal(policy.adam.opt.state[head.proj.weight]["exp_avg"], shared)


def test_one_grpo_update_of_smollm2_moves_the_chosen_log_probs_the_right_way():
    """SmolLM2-135M (the hf backend's model) with LoRA: two prompts x two completions, one rewarded per
    group; after one update the rewarded completion gains log-probability relative to its sibling."""
    from agents.backends import BackendConfig
    from agents.backends.factory import make_backend

    backend = make_backend(BackendConfig(backend="hf", device="cpu"))
    torch.manual_seed(0)  # the LoRA adapters' random init
    grpo = HFGRPO(backend.model, backend.tokenizer, lr=2e-3, lora_rank=4, kl=0.05)
    ids = lambda text: backend.tokenizer(text, add_special_tokens=False)["input_ids"]  # noqa: E731
    pairs = [(ids("2+2="), ids("4")), (ids("2+2="), ids("5")), (ids("Sky is"), ids(" blue")), (ids("Sky is"), ids(" green"))]
    rewards = np.array([1.0, 0.0, 0.0, 1.0])  # group 2 rewards the unlikely " green": the move is learned, not prior
    before = mean_logprob(grpo, pairs)
    advantage = outcome_advantage(rewards, 2, normalize=True)
    stats = grpo.update(pairs, advantage)
    after = mean_logprob(grpo, pairs)
    delta = (after - before).numpy()
    # group-relative: within each group the rewarded completion gains on its sibling (the advantages sum to
    # zero, so shared weights may lift or lower both); and the step ascends the surrogate: sum A x delta > 0
    assert delta[0] > delta[1] and delta[3] > delta[2] and (advantage * delta).sum() > 0, delta
    assert stats["tokens"] == sum(len(p) + len(c) for p, c in pairs)
