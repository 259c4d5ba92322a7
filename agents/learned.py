"""``LearnedPolicy``: a scenario's policy plus a trained bid head (and optionally trained action logits).

The market knows one hook for agents' own bids, ``policy.bids(obs)`` (``market.bid_scheme`` =
``policy`` or ``learned``), and one for learning, ``policy.learn(model)``, called once per round
after the B episodes and before rent, deaths and births (so children inherit the updated rows).
This class composes rather than subclasses: it wraps any policy (rule, blocks, ...), answers
``eligible`` and the skill side by delegation, and adds

* ``bids``: the bid head (agents/bid_head.py) on phi(obs), [B, N] credits. Under ``value`` bids
  (the default) the head predicts what each agent's turn will earn it, ``eligible`` drops agents
  that predict a loss, and ``learn`` regresses the predictions on the round's turns (below);
  under ``reinforce`` the bids are trained through the softmax auction (agents/learner.py);
* ``act``: the inner policy's action, or with ``agents.actions = "grpo"`` an action sampled from
  theta[i] + rule_logit x onehot(rule's action) (theta: per-agent logits, trained by the objective
  ``agents.objective``, agents/objectives, with a critic of (state, action) for tppo, pact and focus,
  agents/critic.py, and the world's solver's action at each acted state for sero, World.oracle); for LLM
  agents the action is the LM's sampled completion, and a LoRA adapter of the LM is trained instead
  (agents/lm_grpo.py);
* ``plan_branches``: with ``agents.branches`` = N, where a training round's branches start (the market then
  restarts those worlds there, market/model.py): focus's pick of the states whose critic error a rollout
  reduces most (``focus.plan``), else tree_opsd's uniform prefixes (``tree_opsd.layout``); the round's steps
  are then credited by the rollouts below them (agents/learner.py ``tree_advantage``);
* births: every row operation the market asks of the policy (resize, spawn, inherit, revise) is
  applied to the inner policy, the head rows and theta together;
* ``learn``: one update from the round's trace (agents/learner.py);

**The value update.** Each turn k of the round (agent i_k bought world b at step t and held it) earned
y_k = what its successor paid for the world + the world's rewards - its fees (the ledger's flows,
``Holdings``). The head's prediction v_k = x_k . row[i] + bias[i] (x_k = phi(obs of turn k)) moves
toward y_k by one normalised least-squares step on the round's Huber loss::

    L = sum_k  s_i / (K_i (|x_k|^2 + 1)) x huber(v_k - y_k)          SGD, step size 1

where agent i took K_i turns this round after n_i earlier ones, and s_i = K_i / (n_i + K_i) while
n_i + K_i <= 1 / value_rate (the plain mean of a young agent's turns), else 1 - (1 - value_rate)^K_i
(an exponential average per turn: XCS's update). With ``agent`` features (x empty) this is exactly
v_i <- v_i + s_i (mean_k y_k - v_i): a per-agent running value; with one-hot features each state's
entry follows the turns taken there.
* ``state_dict``: the inner policy's, the weights, Adam's state and the RNG states, so a resumed
  run continues bit for bit.

Every other call goes to the inner policy (:class:`market.protocols.PolicyWrapper`); scenario code
that reads its own policy's attributes (``rules``, ``recording``) goes through ``policy.unwrapped``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch
from torch import nn

from agents import critic
from agents.bid_head import BidHead, NoFeatures, grow_rows, make_features
from agents.config import AgentsConfig
from agents.learner import (Learner, autocast, bid_objective, bucket_brigade_profit, group_advantage, pick_device,
                             to_cpu, tree_advantage)
from agents.llm_policy import LLMPolicy
from agents.objectives import PolicyBatch, focus, tree_opsd
from agents.objectives import make as make_objective
from agents.tasks.scrl import normalise
from market.money import MICRO
from market.protocols import PolicyWrapper


class LearnedPolicy(PolicyWrapper):
    def __init__(self, inner, cfg: AgentsConfig, seed: int = 0, features=None, learned_bids: bool | None = None):
        super().__init__(inner)
        self.cfg = cfg
        self.learned_bids = cfg.bids == "learned" if learned_bids is None else learned_bids  # else the market's scheme bids
        self.value_bids = self.learned_bids and cfg.bid_objective == "value"
        logits = cfg.actions == "grpo" and not isinstance(inner, LLMPolicy)  # rule worlds: action logits (theta)
        self.device = pick_device(cfg.device, gradients=logits or (self.learned_bids and not self.value_bids))
        self.objective = objective_for(cfg)
        self.lm = None  # LLM agents: their actions are the LM's completions, trained as LoRA (agents/lm_grpo.py)
        if cfg.actions == "grpo" and isinstance(inner, LLMPolicy):
            from agents.lm_grpo import CompletionLearner

            self.lm = CompletionLearner(inner, cfg, seed, self.objective)  # before the features: hf features read the trained LM
        if features is None and self.learned_bids:
            task = getattr(inner, "task", None)
            features = make_features(cfg, getattr(inner, "space", None), getattr(inner, "backend", None),
                                     getattr(task, "summaries", None))
        self.features = features or NoFeatures()  # the market's scheme bids: no head reads features
        self.rng = np.random.default_rng([seed, 0x1EA2])  # action sampling: a stream of its own
        self.acted = []  # (winners, rule action, action, log-prob) per act() since the last learn()
        self.stats = {}
        self.head = BidHead(self.features.size, cfg).to(self.device)
        actions = len(inner.space.actions) if logits else 0  # rule worlds: action logits over the world's actions
        self.theta = nn.Parameter(torch.zeros(2, actions, device=self.device))
        self.critic = None  # tppo, pact, focus on action logits: a critic of (state, action) (agents/critic.py)
        if logits and critic.wanted(self.objective):
            self.critic_features = self.features if self.learned_bids else make_features(cfg, inner.space)
            self.critic = critic.ActionCritic(self.critic_features.size, actions).to(self.device)
        self.turns = np.zeros(2, dtype=np.int64)  # [N] turns each row's value has learned from
        self.action_updates = 0  # rounds whose action loss ran (the summary's policy_updates)
        self._head_changed()  # no acting copy of the weights yet (value bids), no scores cached
        adam = [self.theta] + (list(self.critic.parameters()) if self.critic else [])  # theta: no gradient unless grpo
        if self.value_bids:  # exact normalised steps on the rows (value_step); a shared text projection stays fixed
            if self.head.proj is not None:
                self.head.proj.requires_grad_(False)
        else:
            adam = list(self.head.parameters()) + adam
        rows = [self.theta] + ([] if self.value_bids else [self.head.row, self.head.bias])
        self.learner = Learner(adam, cfg.lr, cfg.max_grad_norm, rows=rows)

    # --- the market's Policy protocol (describe and the rest go to the inner policy) ---------------
    @property
    def reads_auctions(self) -> bool:
        """The reinforce objective replays every auction of the round; value bids read only the payments."""
        return not self.value_bids or self.inner.reads_auctions

    @property
    def branches(self) -> int:
        return self.cfg.branches if self.theta.shape[1] else 0

    def plan_branches(self, obs, lengths, outcome, rng):
        """focus: the candidate states (each full rollout's inner ones) its gain ranks, a state counted once per
        group however many rollouts reached it; every other objective: tree_opsd's layout, uniform prefixes."""
        N, M = self.cfg.branches, lengths.size
        if self.objective.name != "focus":
            source, prefix = tree_opsd.layout(lengths, rng, N)
            return source[M:], prefix[M:]
        t, s = np.nonzero(np.arange(len(obs))[:, None] < lengths[None, :])  # every state a full rollout acted in
        group = s // (self.cfg.group or M)
        _, state = np.unique(np.c_[group, obs[t, s]], axis=0, return_inverse=True)
        state = state.reshape(-1)
        visits = np.unique(np.c_[state, s], axis=0)  # (state, rollout) once each
        n = np.bincount(visits[:, 0], minlength=state.max() + 1)
        r = np.asarray(outcome, dtype=np.float64)
        mean = np.bincount(visits[:, 0], r[visits[:, 1]], minlength=n.size) / n
        var = np.bincount(visits[:, 0], (r[visits[:, 1]] - mean[visits[:, 0]]) ** 2, minlength=n.size) / n
        inner = (t >= 1) | (lengths[s] == 1)  # strictly inside a rollout, as tree_opsd's prefixes
        t, s, state = t[inner], s[inner], state[inner]
        with torch.no_grad():
            phi = torch.as_tensor(self.critic_features(obs[t, s]), device=self.device)
            critic = torch.sigmoid(self.critic.state(phi).float()).cpu().numpy()
        picks = focus.plan(critic - mean[state], var[state], n[state], self.objective.cfg.kappa, M * N, state)
        return s[picks], t[picks]

    def eligible(self, obs: np.ndarray) -> np.ndarray:
        """The inner policy's wake-up; under value bids an agent that predicts a loss sits out."""
        awake = self.inner.eligible(obs)
        return awake & (self._values(obs) >= 0) if self.value_bids else awake

    def bids(self, obs: np.ndarray) -> np.ndarray:
        if self.value_bids:  # numpy only: no torch.no_grad() to enter (~4 us of a blocks step)
            return ((1 - self.cfg.bid_margin) * np.maximum(self._values(obs), 0)).astype(np.float64)
        with torch.no_grad():
            phi = torch.as_tensor(self.features(obs), device=self.device)  # float32, no autocast: same auctions on CPU and GPU
            return self.head.bids(phi).double().cpu().numpy()

    def _values(self, obs: np.ndarray) -> np.ndarray:
        """[B, N] predicted values of this step's observations, once per step (eligible and bids share them).

        Computed in numpy float32 from a CPU copy of the head's weights, refreshed when they change
        (a learning step, a birth, a checkpoint): acting costs no torch call per step, and a run clears
        the same auctions whatever device the head trains on."""
        seen, values = self._scored
        if seen is not obs:
            if self._weights is None:
                head = self.head
                self._weights = (None if head.proj is None else head.proj.weight.detach().float().cpu().numpy().T,
                                 head.row.detach().float().cpu().numpy().T.copy(),
                                 head.bias.detach().float().cpu().numpy())
            proj, rows, bias = self._weights
            phi = self.features(obs)
            x = phi if proj is None else phi @ proj
            values = x @ rows + bias if rows.shape[0] else np.broadcast_to(bias, (len(obs), bias.size))
            self._scored = (obs, values)
        return values

    def _head_changed(self) -> None:
        self._weights, self._scored = None, (None, None)

    def act(self, obs: np.ndarray, winners: np.ndarray) -> np.ndarray:
        actions = self.inner.act(obs, winners)
        if self.lm is not None and self.inner.recording:  # not the held-out or gate episodes an edit pass plays
            self.lm.actions.append(actions)
        if self.cfg.actions != "grpo" or self.lm is not None:
            return actions
        acting = (winners >= 0) & (actions >= 0)
        with torch.no_grad():
            logits = self._logits(np.maximum(winners, 0), np.maximum(actions, 0)).float().cpu().numpy()
        gumbel = -np.log(-np.log(np.clip(self.rng.random(logits.shape), 1e-300, 1.0 - 1e-16)))
        sampled = np.where(acting, np.argmax(logits + gumbel, axis=1), actions)
        logp = logits - np.logaddexp.reduce(logits, axis=1, keepdims=True)
        self.acted.append((np.where(acting, winners, -1), actions, sampled, logp[np.arange(len(sampled)), np.maximum(sampled, 0)]))
        return sampled

    def _logits(self, rows, rule_actions) -> torch.Tensor:
        """[M, A] action logits of agents ``rows`` whose rules say ``rule_actions``."""
        rows = torch.as_tensor(rows, device=self.device)
        prior = nn.functional.one_hot(torch.as_tensor(rule_actions, device=self.device), self.theta.shape[1])
        return self.theta[rows] + self.cfg.rule_logit * prior

    def resize(self, capacity: int) -> None:
        self.inner.resize(capacity)
        if self.head.resize(capacity):
            self._head_changed()
            grow_rows(self.theta, capacity)  # action logits follow the head's rows
            self.turns = np.r_[self.turns, np.zeros(capacity - self.turns.size, dtype=np.int64)]
            self.learner.sync_rows()

    def spawn(self, rows: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.spawn(rows, rng)
        self.head.spawn(rows, rng)
        self._children(rows, None)

    def inherit(self, rows: np.ndarray, parents: np.ndarray, rng: np.random.Generator) -> None:
        self.inner.inherit(rows, parents, rng)
        self.head.inherit(rows, parents, rng)
        self._children(rows, parents)

    def revise(self, rows, parents, obs, found, rng: np.random.Generator) -> np.ndarray:
        """Under value bids a rule revised at a state (``found``) is a new rule: its value starts as a
        newcomer's guess; every other revised row inherits its parent's head row."""
        made = self.inner.revise(rows, parents, obs, found, rng)
        fresh = made & found if self.value_bids else np.zeros_like(made)
        self.head.spawn(rows[fresh], rng)
        self.head.inherit(rows[made & ~fresh], parents[made & ~fresh], rng)
        self._children(rows[made], parents[made])
        return made

    @torch.no_grad()
    def _children(self, rows: np.ndarray, parents: np.ndarray | None) -> None:
        """Newborn rows: theta copied from the parent (zero for a random newcomer); fresh Adam moments;
        a value learned from no turns yet."""
        if rows.size == 0:
            return
        index = torch.as_tensor(rows, device=self.device)
        self.theta[index] = 0.0 if parents is None else self.theta[torch.as_tensor(parents, device=self.device)]
        self.turns[rows] = 0
        self.learner.sync_rows(rows)
        self._head_changed()

    def report(self) -> dict:
        """What the run's summary says about the learner: rounds that updated the policy's actions (logits
        or the LM's adapter), the LM learner's counts, and the wrapped policy's own (skill evolution)."""
        inner = getattr(self.inner, "report", dict)()
        if self.lm is not None:
            return {**inner, **self.lm.counts}
        return {**inner, **({"policy_updates": self.action_updates} if self.theta.shape[1] else {})}

    # --- learning ---------------------------------------------------------------------------
    def learn(self, model) -> None:
        """One update from the round the model just ran (``model.trace``): bids, then actions."""
        self.inner.learn(model)  # the wrapped policy may learn from the round too
        trace, market, cfg = model.trace, model.cfg, self.cfg
        acted, self.acted = self.acted[-len(trace.path):], []  # this round's act() calls, one per step
        self._head_changed()
        self.stats = self._value_step(trace) if self.value_bids else {}
        if self.lm is not None:
            self.stats.update(self.lm.learn(model))
            getattr(self.features, "cache", {}).clear()  # LM features of the old weights
        bid_batch = self._bid_batch(trace, market) if self.learned_bids and not self.value_bids else None
        act_batch = self._action_batch(trace, acted, model) if self.theta.shape[1] and acted else None
        if bid_batch is None and act_batch is None:
            return
        for epoch in range(cfg.epochs):
            losses, stats = [], dict(self.stats)
            with autocast(self.device):
                if bid_batch is not None and epoch == 0:  # REINFORCE is on-policy: the first step only
                    phi, eligible, winner, cap, advantage = bid_batch
                    bids = torch.minimum(self.head.bids(phi), cap)
                    loss, s = bid_objective(bids, eligible, winner, advantage, market.temperature, cfg.entropy)
                    losses.append(loss), stats.update(s)
                if act_batch is not None:
                    loss, s = self._action_loss(*act_batch)
                    losses.append(loss), stats.update(s)
            if losses:
                stats["grad_norm"] = self.learner.step(sum(losses))
        self.action_updates += act_batch is not None
        self.stats = stats

    def _action_loss(self, rows, rule_actions, actions, old_logp, advantage, world, phi, oracle, fixed):
        """The configured objective (agents/objectives, ``agents.objective``) on the round's sampled actions,
        one token each, plus ``kl`` x the exact KL to the rule alone (the reference policy). Signals, where they
        are asked for: the critic's logits of each (state, action) and state, the oracle's action scored
        (sero), and ``fixed``, those the update does not move (state ids, the oracle's mask and weight)."""
        cfg = self.cfg
        logp = torch.log_softmax(self._logits(rows, rule_actions).float(), -1)
        chosen = logp.gather(1, actions[:, None])[:, 0]
        ref = torch.log_softmax(cfg.rule_logit * nn.functional.one_hot(rule_actions, logp.shape[1]).float(), -1)
        solved, groups = self._round
        signals = dict(fixed)
        if self.critic is not None:
            signals.update(token_logits=self.critic(phi, actions), value_logits=self.critic.state(phi))
        if oracle is not None:
            signals["oracle_logp"] = logp.gather(1, oracle.clamp(min=0)[:, None])[:, 0]
        batch = PolicyBatch.one_token(logp=chosen, old_logp=old_logp, advantage=advantage, outcome=solved[world],
                                      group=groups[world], episode=world,
                                      entropy=-(logp.exp() * logp).sum(-1).detach(),
                                      ref_logp=ref.gather(1, actions[:, None])[:, 0], **signals)
        loss, stats = self.objective(batch)
        kl = (logp.exp() * (logp - ref)).sum(-1)
        if cfg.kl:
            loss = loss + cfg.kl * kl.mean()
        return loss, {**stats, "kl": float(kl.detach().mean())}

    def _value_step(self, trace) -> dict:
        """One normalised least-squares step of every turn's predicted value toward what it earned."""
        agents, t, b, earned = turn_targets(trace)
        if agents.size == 0:
            return {}
        k = np.bincount(agents, minlength=self.turns.size)
        n, rate = self.turns, self.cfg.value_rate
        share = np.where(n + k <= 1 / rate, k / np.maximum(n + k, 1), 1 - (1 - rate) ** k)
        d = self.device
        phi = torch.as_tensor(self.features(trace.obs[t, b]), device=d)
        loss, errors = value_loss(self.head, phi, torch.as_tensor(agents, device=d),
                                  torch.as_tensor(earned, dtype=torch.float32, device=d),
                                  torch.as_tensor(share[agents] / k[agents], dtype=torch.float32, device=d),
                                  self.cfg.huber)
        value_step(self.head, loss)
        self._head_changed()
        self.turns += k
        return {"value_loss": float(errors.detach().mean()), "value_turns": int(agents.size)}

    def _bid_batch(self, trace, market):
        """Auctions of the round with a winner and a choice (>= 2 eligible) -> tensors for bid_objective."""
        choice = (trace.winner >= 0) & (trace.eligible.sum(-1) >= 2)
        t, b = np.nonzero(choice)
        if t.size == 0:
            return None
        N = self.head.capacity
        eligible = np.zeros((t.size, N), dtype=bool)
        eligible[:, : trace.eligible.shape[2]] = trace.eligible[t, b]  # the population may have grown since
        cap = np.full((t.size, N), np.inf)
        cap[:, : trace.wealth.shape[1]] = np.maximum(trace.wealth[t], 0) * market.bid_cap / MICRO
        if self.cfg.advantage == "global":
            advantage = group_advantage(trace.reward.sum(axis=0), self.cfg.group, normalize=False)[b]
        else:
            advantage = bucket_brigade_profit(trace)[t, b] / MICRO / self.cfg.bid_scale  # in typical bids
        d = self.device
        return (torch.as_tensor(self.features(trace.obs[t, b]), device=d), torch.as_tensor(eligible, device=d),
                torch.as_tensor(trace.winner[t, b], device=d), torch.as_tensor(cap, dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d))

    def _action_batch(self, trace, acted, model=None):
        """Steps where a winner sampled an action -> tensors for grpo_objective (A broadcast per episode)."""
        rows, rule_actions, actions, logp = (np.stack(column) for column in zip(*acted))  # each [T, B]
        t, b = np.nonzero(rows >= 0)
        if t.size == 0:
            return None
        B = trace.path.shape[1]
        full = np.arange(B) if trace.source is None else trace.source  # each world's full rollout
        groups = full // (self.cfg.group or int((full == np.arange(B)).sum()))  # a branch is in its source's group
        if trace.source is not None:  # each step judged by the rollouts below it (agents.branches)
            advantage = tree_advantage(trace.reward.sum(axis=0), trace.source, trace.prefix, t, b, groups)
        elif self.cfg.tasks == "scrl":  # sub-problems differ in difficulty: normalised among each one's rollouts
            advantage = normalise(model.world.task_ids, trace.reward.sum(axis=0))[b]
        else:
            advantage = group_advantage(trace.reward.sum(axis=0), self.cfg.group, normalize=True)[b]
        if self.cfg.credit != "grpo" and model is not None:  # a per-step estimator (agents/credit)
            from agents.credit.step_advantages import step_advantages

            advantage = step_advantages(model, self.cfg.estimator(), self.cfg.group, actions, logp)[t, b]
        d = self.device
        self._round = (torch.as_tensor(trace.solved, dtype=torch.float32, device=d),
                       torch.as_tensor(groups, device=d))  # each world's outcome (success) and group
        rows, rule_actions = torch.as_tensor(rows[t, b], device=d), torch.as_tensor(rule_actions[t, b], device=d)
        obs, needs = trace.obs[t, b], self.objective.needs
        phi = torch.as_tensor(self.critic_features(obs), device=d) if self.critic is not None else None
        oracle, fixed = None, {}
        if "state" in needs:  # equal observations: the same state
            fixed["state"] = torch.as_tensor(np.unique(obs, axis=0, return_inverse=True)[1].reshape(-1), device=d)
        if "oracle_logp" in needs:  # the solver's action where the step acted, weighted by its probability before
            oracle = torch.as_tensor(model.world.oracle(obs), device=d)  # the update
            with torch.no_grad():
                before = torch.log_softmax(self._logits(rows, rule_actions).float(), -1)
            fixed.update(oracle_mask=oracle >= 0, oracle_weight=before.gather(1, oracle.clamp(min=0)[:, None])[:, 0].exp())
        return (rows, rule_actions, torch.as_tensor(actions[t, b], device=d),
                torch.as_tensor(logp[t, b], dtype=torch.float32, device=d),
                torch.as_tensor(advantage, dtype=torch.float32, device=d), torch.as_tensor(b, device=d), phi, oracle,
                fixed)

    # --- checkpoints ------------------------------------------------------------------------
    def state_dict(self) -> dict:
        return {
            "inner": self.inner.state_dict(),
            "head": to_cpu(self.head.state_dict()),
            "theta": self.theta.detach().cpu().clone(),
            "turns": self.turns.copy(),
            "optimizer": self.learner.state_dict(),
            "rng": self.rng.bit_generator.state,
            "torch_rng": torch.get_rng_state(),
            "lm": None if self.lm is None else self.lm.state_dict(),
            "critic": None if self.critic is None else to_cpu(self.critic.state_dict()),
            "action_updates": self.action_updates,
        }

    def load_state_dict(self, state: dict) -> None:
        self.inner.load_state_dict(state["inner"])
        with torch.no_grad():  # shapes follow the checkpoint (the population may have grown)
            for name, value in state["head"].items():
                self.head.get_parameter(name).data = value.to(self.device).clone()
            self.theta.data = state["theta"].to(self.device).clone()
            if self.critic is not None:
                self.critic.load_state_dict(state["critic"])
        self.turns = state["turns"].copy()
        self.action_updates = state.get("action_updates", 0)
        self.learner.load_state_dict(state["optimizer"])
        self.rng.bit_generator.state = state["rng"]
        torch.set_rng_state(state["torch_rng"])
        if self.lm is not None:
            self.lm.load_state_dict(state["lm"])
        self.acted.clear()
        self._head_changed()


def objective_for(cfg: AgentsConfig):
    """agents.objective with agents.clip as its clip range (its own or its inner grpo's), other settings its defaults."""
    from agents.objectives import module

    fields = {f.name for f in dataclasses.fields(module(cfg.objective).Config)}
    settings = {"clip": cfg.clip} if "clip" in fields else {"grpo": {"clip": cfg.clip}} if "grpo" in fields else {}
    return make_objective(cfg.objective, **settings)


def turn_targets(trace) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every turn of the round -> (agent rows, step bought, world, credits earned) [K] each.

    A turn earned the price its successor paid for the world, plus the world's rewards it received,
    minus its action fees (``Holdings``: the round's ledger flows, before what it paid to buy).
    """
    held, _ = trace.payments.holdings(trace.path)
    return held.agent, held.start, held.world, (held.sold + held.rewards - held.fees) / MICRO


def value_step(head, loss: torch.Tensor) -> None:
    """Backward :func:`value_loss`, then one SGD step of size 1 on the rows and biases: the normalised step it is
    built for. Written in place rather than through torch.optim.SGD, whose construction imports torch._dynamo
    (about 0.9 s of a relay run that takes 5); the arithmetic is SGD's, p - grad."""
    head.row.grad = head.bias.grad = None
    loss.backward()
    with torch.no_grad():
        for p in (head.row, head.bias):
            p.sub_(p.grad)
            p.grad = None


def value_loss(head, phi, agents, target, share, delta: float):
    """The value heads' loss, sum_k share_k / (|x_k|^2 + 1) x huber(v_k - y_k), and the per-turn errors.

    x_k = the turn's features as the rows see them (a shared projection is held fixed); dividing by
    |x_k|^2 + 1 (NLMS) makes one SGD step of size 1 move turn k's prediction by share_k x its error.
    """
    x = head.proj(phi).detach() if head.proj is not None else phi
    errors = nn.functional.huber_loss(head.turn_values(phi, agents), target, reduction="none", delta=delta)
    return (share / ((x * x).sum(-1) + 1) * errors).sum(), errors
