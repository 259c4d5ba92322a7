"""Compare the credit estimators (agents/credit) by training the same relay population with each.

    python -m experiments.credit_compare [--seeds 5] [--rounds 60] [--credit grpo,draco,...] [--out FILE]

The economy is relay's (scenarios/relay.toml: holland bids, bucket brigade, rent, births and
bankruptcy). On top of its rule (which decides when it wakes and what it bids), every agent has
action logits per stage, sampled when it wins; a newcomer's rule action starts ``rule_logit``
above the others, and a child copies its parent's logits. After each round the round's
trajectories (agents/credit/market.py, with relay's signals from scenarios/relay.py)
go through the estimator, and each step's advantage A moves its agent's logits by REINFORCE::

    logits[agent, stage] += lr * A * (onehot(action) - softmax(logits[agent, stage]))

``none`` does no update (the economy alone). The logits are per (agent, stage), which is why this learner
is its own and not the library's (agents/action_logits.py, one residual per agent over its rule, the same at
every state): collapsed to one vector per agent, this same update no longer lifts relay's success above the
economy's, as the library's learner does not at any lr, clip or rule_logit tried. Same seeds, same budget, same initial population
for every estimator. The table: final success (last 20% of episodes, mean +- std over seeds),
episodes until the round-success moving average (5 rounds) first reaches ``--threshold``,
and the variance of the final success over seeds.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from agents import credit as C
from agents.credit.step_advantages import provides
from agents.credit.market import trajectories
from market import MarketModel, Policy
from agents.bid_head import Embedder
from experiments import rows as results
from scenarios import relay
from scenarios.run.config import load


class LogitPolicy(Policy):
    """A rule policy whose winners sample their action from per-(agent, stage) logits, learned by credit."""

    def __init__(self, rules, stages: int, estimator, group: int, lr: float, rule_logit: float, seed: int, signals):
        self.rules, self.K, self.est, self.G, self.lr, self.rule_logit = rules, stages, estimator, group, lr, rule_logit
        self.A = len(rules.space.actions)
        self.logits = np.zeros((0, stages, self.A))
        self.rng = np.random.default_rng(seed)
        self.signals = signals
        self.taken: list = []  # (actions, logp) [B] per step of the round

    # the Policy protocol: the rule decides eligibility; the logits decide the action
    def eligible(self, obs):
        return self.rules.eligible(obs)

    def act(self, obs, winners):
        stage = np.minimum(np.asarray(obs)[:, 0], self.K - 1)
        z = self.logits[np.maximum(winners, 0), stage]
        p = np.exp(z - z.max(1, keepdims=True))
        p /= p.sum(1, keepdims=True)
        a = (p.cumsum(1) > self.rng.random((len(z), 1))).argmax(1)
        self.taken.append((a, np.log(p[np.arange(len(a)), a])))
        return np.where(winners >= 0, a, -1)

    def resize(self, capacity):
        self.rules.resize(capacity)
        if capacity > len(self.logits):
            grown = np.zeros((capacity, self.K, self.A))
            grown[: len(self.logits)] = self.logits
            self.logits = grown

    def _from_rules(self, rows):
        self.logits[rows] = 0.0
        self.logits[rows, :, self.rules.rules.action[rows]] = self.rule_logit

    def spawn(self, rows, rng):
        self.rules.spawn(rows, rng)
        self._from_rules(rows)

    def inherit(self, rows, parents, rng):
        self.rules.inherit(rows, parents, rng)
        changed = self.rules.rules.action[rows] != self.rules.rules.action[parents]
        self.logits[rows] = self.logits[parents]
        self._from_rules(rows[changed])  # a mutated action starts afresh from its rule

    def describe(self, rows):
        return self.rules.describe(rows)

    def state_dict(self):
        return {"rules": self.rules.state_dict(), "logits": self.logits.copy()}

    def load_state_dict(self, state):
        self.rules.load_state_dict(state["rules"])
        self.logits = state["logits"].copy()

    # the learning hook MarketModel.step calls after the round's episodes
    def learn(self, model):
        taken, self.taken = self.taken, []
        if self.est is None or not taken:
            return
        actions, logp = (np.stack(x) for x in zip(*taken))
        groups = trajectories(model, actions=actions, world_signals=self.signals,
                              group=self.G, logp=logp)
        for group in groups:
            credit = self.est(group)
            for t, adv in zip(group, credit.steps):
                if len(t) == 0:
                    continue
                stage = np.minimum(np.asarray(t.state[:-1]), self.K - 1)
                z = self.logits[t.agent, stage]
                p = np.exp(z - z.max(1, keepdims=True))
                p /= p.sum(1, keepdims=True)
                grad = -p
                grad[np.arange(len(t)), t.action] += 1
                np.add.at(self.logits, (t.agent, stage), self.lr * np.asarray(adv)[:, None] * grad)


def run(name: str, seed: int, rounds: int, group: int, batch: int, lr: float, embed) -> np.ndarray:
    exp = load("relay", [f"market.batch={batch}", f"relay.p_specialist={0.2}"], seed=seed)
    world, rules = relay.build(exp.scenario)
    K = exp.scenario.stages
    signals = relay.credit_signals(K, world.space.actions)
    if embed is not None:  # share one MiniLM cache across runs
        base = signals

        def signals(obs, act, b=None, steps=None):
            out = base(obs, act)
            names = out["skill"]
            out["embedding"] = embed([f"stage = {k}, action = {n}" for k, n in zip(out["state"][:-1], names)])
            return out

    est = None if name == "none" else C.make(name)
    policy = LogitPolicy(rules, K, est, group, lr, rule_logit=1.0, seed=seed + 1, signals=signals)
    model = MarketModel(world, policy, exp.market, exp.population, seed=seed)
    success = np.zeros(rounds)
    for r in range(rounds):
        model.step()
        success[r] = model.last_success_rate
    return success


def summarise(curves: np.ndarray, batch: int, threshold: float) -> dict:
    """curves [seeds, rounds] -> final success (last 20%), its std, rounds-to-threshold in episodes."""
    tail = max(1, curves.shape[1] // 5)
    final = curves[:, -tail:].mean(1)
    kernel = np.ones(5) / 5
    reach = []
    for c in curves:
        smooth = np.convolve(c, kernel, mode="valid")
        hit = np.flatnonzero(smooth >= threshold)
        reach.append((hit[0] + 5) * batch if hit.size else np.nan)
    reach = np.array(reach, dtype=np.float64)
    return {"final": final.mean(), "std": final.std(), "var": final.var(), "reach": np.nanmean(reach) if np.isfinite(reach).any() else np.nan,
            "reached": int(np.isfinite(reach).sum())}


def main(argv=None) -> str:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=60)
    ap.add_argument("--group", type=int, default=4, help="G: rollouts of the same task per group")
    ap.add_argument("--batch", type=int, default=16, help="episodes per round (a multiple of --group)")
    ap.add_argument("--lr", type=float, default=0.5)
    ap.add_argument("--threshold", type=float, default=0.8)
    ap.add_argument("--credit", default="all", help="comma-separated estimator names, or all (those relay supports)")
    ap.add_argument("--no-embed", action="store_true", help="skip MiniLM (and so scpo)")
    ap.add_argument("--out", default=None, help="also write the table to this file")
    ap.add_argument("--rows", type=Path, help="write the table as JSON Lines rows with their provenance (docs/results pages)")
    args = ap.parse_args(argv)
    signals = provides(relay.SPEC.credit_signals) | (set() if args.no_embed else {"embedding"})
    names = ["none", *C.supported(signals)] if args.credit == "all" else args.credit.split(",")
    for n in names:
        if n != "none":
            C.require(n, signals, "relay")
    embed = None if args.no_embed or "scpo" not in names else Embedder()
    rows = []
    for name in names:
        t0 = time.time()
        curves = np.stack([run(name, s, args.rounds, args.group, args.batch, args.lr, embed if name == "scpo" else None)
                           for s in range(args.seeds)])
        rows.append((name, summarise(curves, args.batch, args.threshold), time.time() - t0))
    episodes = args.rounds * args.batch
    lines = [(f"relay (K=5, p_specialist=0.2), {args.seeds} seeds x {episodes} episodes, G={args.group}, lr={args.lr}; "
             f"threshold {args.threshold}"),
             "", "| credit | final success (mean +- std) | episodes to threshold (seeds reaching) | variance across seeds |",
             "|---|---|---|---|"]
    for name, s, _ in rows:
        reach = "-" if np.isnan(s["reach"]) else f"{s['reach']:.0f}"
        lines.append(f"| {name} | {s['final']:.3f} +- {s['std']:.3f} | {reach} ({s['reached']}/{args.seeds}) | {s['var']:.4f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        with open(args.out, "w") as f:
            f.write(table + "\n")
    if args.rows:
        results.write(args.rows, results.from_markdown(table), "experiments.credit_compare", argv)
    return table


if __name__ == "__main__":
    main()
