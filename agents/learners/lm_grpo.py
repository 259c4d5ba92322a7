"""LoRA GRPO from the market's own rollouts: the policy weights of LLM agents trained by the market.

``agents.actions = "grpo"`` on an LLM scenario (wordmath). Each training round the market runs B
worlds in lockstep, G consecutive ones on the same problem (``agents.group``; the world draws
them, market.protocols.World.group); the agents' completions are sampled at
``agents.lm.temperature`` (0.3 by default: SmolLM2-135M at 1.0 solves almost nothing, which leaves
no contrast within a group), and after the round one GRPO step (agents/learners/hf_grpo.py, :class:`HFGRPO`) moves one LoRA adapter on
the shared SmolLM2::

    A(t, b) = (R_b - mean_g R) / (std_g R + eps)     R_b: world b's outcome (agents.credit = "grpo")
            = estimator(round)[t, b]                  any other agents.credit (agents/credit)
    L = -mean over completions of min(rho A, clip(rho, 1 +- clip) A) (+ kl x KL to the base model)

with rho the completion's length-normalised ratio. A round that branches (``agents.branches`` = N,
market/branching.py: M = B / (1 + N) full rollouts, then N restarts of each from a state it reached, tree_opsd's
uniform prefixes or contextpilot's states after a context edit) credits each completion by the rollouts below the
state it led to (agents/credit/advantages.py ``tree_advantage``; contextpilot's own, agents/objectives/contextpilot.py), a
branch in its source's group; the steps a branch took over from its source were never its completions, so they
train once. Completions whose advantage is 0 (a group whose
rollouts all scored the same) carry no gradient and are not run, unless the loss reads more than the
advantage: the KL term, a critic (tppo, pact: their advantages are the critic's, and it learns from
failures too), an oracle (sero's supervision needs no contrast) or a failure's lesson (distil, hint_sd, diamond_sd).
``agents.objective`` other than grpo replaces the surrogate (agents/objectives, on the completions' tokens:
log-probabilities, entropies, the episode's outcome, its group, empo's ``effect`` (role, state summary
and parsed action), focus's ``state`` (role and state summary), tppo's ``token_logits`` and pact's and focus's
``value_logits`` (a linear critic on the LM's last hidden states, agents/learners/critic.py) and sero's oracle: the text task's ``lesson``, the correct output at the step's state
(wordmath: the problem's expression, its answer), scored under the adapted model) and batch C's privileged
passes (agents/llm/privileged_pass.py: the same completions rescored by the engine with the correct output, the
outcome or a failed sibling's reply in the prompt, and the gold answer's belief before and after each reply;
hint_sd's rescoring by an EMA of the adapter weights, agents/learners/ema_weights.py, and the world's fault locator;
distil's teacher samples, written with the correct output in the prompt and verified by the world;
evidence_diagnosis's rewrites, written with the world's rubric in the prompt, and each reply's grounding;
their tokens are the learner's ``lm_privileged_tokens``, never an agent's), and alignopsd's ``thought``, each
completion's text embedded by the frozen MiniLM (agents/learners/bid_head.py, loaded on first use), and diamond_sd's replies
retrieved from the agents' own successes at a failure's canonical states (the world's ``subgoals``; a bounded memory
of them, in the learner's checkpoint); an objective reading a signal the
LM learner does not give (candidate scores) is refused at load.

**One adapter, shared by every role and agent.** Agents differ by their frozen role prompt and their
skills; the weights are the population's common substrate, as the frozen model was. Per-role
adapters would need an adapter switch per batch of the lockstep call and split the few completions
a round has into smaller groups. Acting, wake-up scoring and rewrites all run through the adapted
model from the next round on (the injection is in place; the policy's caches are cleared after each
step). Evaluation is greedy; the complete-agent baseline runs on the base model (``frozen``).

The run gets a private copy of the engine (``make_backend``): the process-wide shared one
(agents/backends/factory.py) must stay the frozen model for every other run in the process. It is
float32 unless ``llm.dtype`` names another: a LoRA step's effect on the model's outputs is below
bfloat16's rounding of them (measured: after one step at agents.lm.lr 1e-4 on a bfloat16 SmolLM2 the
completions' log-probabilities moved against their advantages as often as with them).
"""

from __future__ import annotations

import contextlib
import dataclasses

import numpy as np
import torch

from agents.learners import critic
from agents.backends.factory import make_backend
from agents.config import AgentsConfig
from agents.credit.advantages import outcome_advantage, tree_advantage
from agents.credit.step_advantages import step_advantages
from agents.learners.hf_grpo import HFGRPO
from agents.learners.base import RoundLearner, to_cpu
from agents.objectives import contextpilot, diamond_sd, tree_opsd
from agents.objectives.batch import PRIVILEGED
from agents.learners.ema_weights import EMAWeights
from agents.llm.privileged_pass import RUBRIC, contexts, failed_replies, grounding, located, score, teacher_samples, verified


class CompletionLearner(RoundLearner):
    """The action learner of LLM agents (their actions are the LM's completions): the composed policy calls
    :meth:`act` with the round's actions, :meth:`learn` after it; its Adam is its own (the adapter's)."""

    moves_features = True  # hf bid features read the trained LM
    PROVIDES = ("effect", "token_logits", "value_logits", "state", "thought", "grounding", "hindsight_logp")
    """Each completion's executed effect (role, state summary, parsed action), state ids (role, state summary), a
    token critic's logits, the completion's text embedded by the frozen MiniLM, its grounding in what the agent read
    (agents/llm/privileged_pass.py) and its rescoring with the outcome in context. Its KL to the base model is its
    own (agents.kl), not an objective's ref_logp."""
    TAUGHT = ("teacher_logp", "sibling_logp", "belief_before", "belief_after", "hint_logp", "located",
              "teacher_sample_logp", "teacher_sample_mask", "teacher_verified")
    PAIRED = ("hindsight_logp", *TAUGHT)
    """What its privileged pass gives by pairing a rollout with its group's consecutive siblings (a branched round
    holds no such pairs)."""
    PROVIDES_WHERE = {
        "oracle": ("oracle_logp", "oracle_mask", "oracle_weight", *TAUGHT),
        "subgoals": ("subgoals", "breakpoint", "retrieved_logp", "retrieved_mask"),
        "rubric": ("rubric_sample_logp", "rubric_sample_mask", "rubric_sample_grounding"),
    }
    """oracle (the world knows the correct output at a state): its solver's continuation of each step, scored; each
    step rescored with the correct output in context (by the policy, and by an EMA of its weights), and with a failed
    sibling's answer in its place; the gold answer's likelihood before and after each reply; the world's verdict on a
    failed step's reply (the fault locator); the policy's own samples with the correct output in context, verified
    by the world, scored without it. subgoals (the world names a state's achieved sub-goals): each step's canonical
    state, the state graph's breakpoint of each failure, and the verified reply of an own success at a recovery
    step's state. rubric (the world writes one): the policy's own rewrites of failed steps with the rubric in
    context, scored without it, and their grounding."""

    def __init__(self, policy, cfg: AgentsConfig, seed: int = 0, objective=None):
        """``policy``: an LLMPolicy on the hf backend; it gets its own engine and explores from now on.
        ``objective``: agents.objective (agents/objectives); None or grpo: HFGRPO's own clipped surrogate."""
        self.policy, self.cfg, self.objective = policy, cfg, objective
        engine = policy.backend.cfg
        policy.backend = backend = make_backend(dataclasses.replace(engine, dtype="float32") if engine.dtype == "auto" else engine)
        policy.explore_temperature = cfg.lm.temperature
        policy.base_weights = self.frozen
        with torch.random.fork_rng(devices=[]):  # the adapters' init from the run's seed, the global stream untouched
            torch.manual_seed(seed)
            self.grpo = HFGRPO(backend.model, backend.tokenizer, lr=cfg.lm.lr, clip=cfg.clip, kl=cfg.kl,
                               lora_rank=cfg.lm.lora_rank, max_grad_norm=cfg.max_grad_norm,
                               critic=critic.wanted(objective), temperature=cfg.lm.temperature)
        self.ema = EMAWeights([p for p in self.grpo.model.parameters() if p.requires_grad], objective.cfg.ema) \
            if objective is not None and "hint_logp" in objective.needs else None  # hint_sd's slow teacher
        self.memory = diamond_sd.Memory(objective.cfg.memory) \
            if objective is not None and "retrieved_logp" in objective.needs else None  # diamond_sd's own successes
        self.actions: list[np.ndarray] = []  # [B] the world's actions per act() call of the round
        self._embedder = None  # the frozen MiniLM, loaded by the first round whose objective reads ``thought``
        self.counts = {"policy_updates": 0, "lm_completions_trained": 0, "lm_train_tokens": 0, "lm_privileged_tokens": 0}
        if cfg.branches:  # branches played, and of them those restarted right after a context edit
            self.counts.update(lm_branches=0, lm_branches_after_edit=0)
        if self.memory is not None:  # diamond_sd's failures broken, and the steps it taught
            self.counts.update(lm_breakpoints=0, lm_recovery_steps=0)

    @contextlib.contextmanager
    def frozen(self):
        """The base model, adapters off (the baselines' model); the prefix KV cache is per weights."""
        backend = self.policy.backend
        backend.weights_changed()
        with self.grpo.model.disable_adapter():
            yield
        backend.weights_changed()

    def embedder(self, texts: list[str]) -> np.ndarray:
        """[n, 384] the texts' unit MiniLM embeddings (agents/learners/bid_head.py), on the learner's device; not cached:
        completions rarely repeat across rounds, so a cache would only grow."""
        if self._embedder is None:
            from agents.learners.bid_head import MiniLM

            self._embedder = MiniLM(str(self.grpo.device))
        return self._embedder(texts)

    @property
    def branches(self) -> int:
        return self.cfg.branches

    def plan_branches(self, obs, lengths, outcome, rng):
        """contextpilot: from the states right after the full rollouts' context edits; every other objective:
        tree_opsd's layout, uniform inner prefixes."""
        N, M = self.cfg.branches, lengths.size
        edits = self.edits(self.policy.generations[-len(obs):], len(obs), M)
        if self.objective is not None and self.objective.name == "contextpilot":
            source, prefix = contextpilot.plan(edits, lengths, N, rng)
        else:
            source, prefix = (x[M:] for x in tree_opsd.layout(lengths, rng, N))
        self.counts["lm_branches"] += source.size
        self.counts["lm_branches_after_edit"] += int(edits[np.maximum(prefix - 1, 0), source][prefix > 0].sum())
        return source, prefix

    def edits(self, steps: list, T: int, B: int) -> np.ndarray:
        """[T, B] the world's ``context_edit``: a completion of one of its ``edit_roles`` that parsed to a move (the
        market applies the move of a winner that did not forfeit)."""
        roles, policy = set(self.policy.task.world.edit_roles), self.policy
        out = np.zeros((T, B), dtype=bool)
        for t, generations in enumerate(steps):
            for b, row, _, _, payload in generations:
                if b < B and payload is not None and policy.roles[policy.role[row]].name in roles:
                    out[t, b] = True
        return out

    def act(self, obs: np.ndarray, winners: np.ndarray, actions: np.ndarray) -> np.ndarray:
        """The LM's completions are the actions: recorded (not the held-out or gate episodes an edit pass plays)."""
        if self.policy.recording:
            self.actions.append(actions)
        return actions

    def report(self) -> dict:
        return dict(self.counts)

    def learn(self, model) -> dict:
        """One GRPO step from the round ``model`` just ran."""
        trace, cfg = model.trace, self.cfg
        T, B = trace.path.shape
        full = np.arange(B) if trace.source is None else trace.source  # each world's full rollout
        G = cfg.group_size(int((full == np.arange(B)).sum()))  # one reading of agents.group for the advantages,
        group = full // G  # the group ids and the siblings; a branch is in its source's group
        steps, self.policy.generations = self.policy.generations[-T:], []
        actions, self.actions = self.actions[-T:], []
        policy, objective = self.policy, self.objective
        edit = self.edits(steps, T, B) if objective is not None and "context_edit" in objective.needs else None
        if trace.source is not None:  # each step judged by the rollouts below it (agents.branches)
            t, b = (x.reshape(-1) for x in np.indices((T, B)))
            outcome = trace.reward.sum(axis=0)
            advantage = (contextpilot.advantage(outcome, trace.source, trace.prefix, t, b, group, edit[t, b])
                         if edit is not None else tree_advantage(outcome, trace.source, trace.prefix, t, b, group))
            advantage = advantage.reshape(T, B)
        elif cfg.credit == "grpo":
            advantage = np.tile(outcome_advantage(trace.reward.sum(axis=0), G, normalize=True), (T, 1))
        else:
            logp = np.zeros((T, B))
            for t, generations in enumerate(steps):
                for b, _, _, done, _ in generations:
                    logp[t, b] = (done.logprob or 0.0) / max(done.tokens, 1)
            advantage = step_advantages(model, cfg.estimator(), G, np.stack(actions), logp)
        needs = set(objective.needs) if objective is not None else set()
        oracle = "oracle_logp" in needs  # sero: the task's correct output
        taught = bool(needs & {"teacher_sample_logp", "located", "rubric_sample_logp"})  # distil, hint_sd,
        # evidence_diagnosis: failures' lessons, contrast or not
        dense = bool(cfg.kl) or critic.wanted(objective) or oracle or taught or self.memory is not None
        chosen = [(advantage[t, b], p, done.text, done.finish == "stop", b, (policy.roles[policy.role[row]].name,
                                                       policy.task.summaries(trace.obs[t, b][None])[0], payload),
                   trace.obs[t, b], t)
                  for t, generations in enumerate(steps)
                  for b, row, p, done, payload in generations if advantage[t, b] != 0 or dense]
        plain = objective is None or objective.name == "grpo"
        if not chosen:
            if plain:  # Adam steps every round, as its moments and bias correction assume: on a zero gradient here
                self.grpo.coast()
                self.policy.weights_changed()
            return {"lm_completions": 0}
        weights, prompts, texts, ended, worlds, effects, seen, times = zip(*chosen)
        messages = [p.messages() for p in prompts]
        # grpo trains a reply's end too (its turn's end token after a reply that stopped); the other objectives
        # read per-token signals scored on the text alone, aligned token for token with it
        pairs = self.grpo.encode(messages, list(texts), ended if plain else None)
        worlds = np.array(worlds)
        roles = [role for role, _, _ in effects]
        fields = {"outcome": trace.solved[worlds].astype(float), "group": group[worlds],
                  "episode": worlds, "effect": effect_ids(effects), "state": effect_ids([e[:2] for e in effects])}
        if trace.source is not None:
            fields["branch"] = trace.source[worlds] != worlds
        if edit is not None:
            fields["context_edit"] = edit[np.array(times), worlds]
        privileged = needs & set(PRIVILEGED)
        lessons = [policy.task.lesson(obs, role)[1] for obs, role in zip(seen, roles)] \
            if oracle or taught or privileged & {"teacher_logp", "sibling_logp", "hint_logp"} else None  # the correct output at each state
        if oracle:
            fields["oracle"] = self.targets(messages, lessons)
        failed = ~trace.solved[worlds].astype(bool)
        if "located" in needs:  # hint_sd: the world's fault locator
            fields["located"] = located(policy.task.verify, texts, roles, seen, failed)
        if "teacher_sample_logp" in needs:  # distil: the teacher writes, for failed episodes' steps; the world verifies
            samples, spent = teacher_samples(policy.backend, prompts, lessons, np.flatnonzero(failed))
            self.counts["lm_privileged_tokens"] += spent
            fields["teacher_verified"] = verified(policy.task.verify, samples, roles, seen)
            fields["teacher_sample"] = self.targets(messages, samples)
        if self.memory is not None:  # diamond_sd: failures' recovery steps, taught the replies of own verified successes
            rows = [(w, obs, role, payload, text)
                    for w, obs, (role, _, payload), text in zip(worlds, seen, effects, texts)]
            graph = diamond_sd.round_steps(policy.task, trace.solved, rows)
            replies, fields["breakpoint"], fields["subgoals"] = diamond_sd.plan(graph, self.memory)
            fields["retrieved"] = self.targets(messages, replies)
            self.counts["lm_breakpoints"] += int(fields["breakpoint"].sum())
            self.counts["lm_recovery_steps"] += sum(r is not None for r in replies)
        if "grounding" in needs:  # evidence_diagnosis: how much of each reply its agent read
            fields["grounding"] = np.array([grounding(text, p.user, p.system) for p, text in zip(prompts, texts)])
        if "rubric_sample_logp" in needs:  # evidence_diagnosis: failed episodes' steps rewritten against the world's rubric
            rubrics = [policy.task.rubric(obs, role) for obs, role in zip(seen, roles)]
            samples, spent = teacher_samples(policy.backend, prompts, rubrics, np.flatnonzero(failed), RUBRIC)
            self.counts["lm_privileged_tokens"] += spent
            fields["rubric_sample_grounding"] = np.array([0.0 if s is None else grounding(s, p.user, p.system)
                                                          for p, s in zip(prompts, samples)])
            fields["rubric_sample"] = self.targets(messages, samples)
        if privileged:  # batch C: the same completions rescored with what the agent did not see
            siblings = failed_replies(steps, lambda row: policy.roles[policy.role[row]].name, trace.solved) \
                if "sibling_logp" in privileged else None
            gold = [policy.task.question(obs)[1] for obs in seen] if privileged & {"belief_before", "belief_after"} else None
            wanted = contexts(privileged, prompts, texts, worlds, roles, trace.solved, G, lessons, siblings, gold)
            slow = {name: wanted.pop(name) for name in ("hint_logp",) if name in wanted}  # the EMA teacher's
            fields["privileged"], spent = score(policy.backend, wanted)
            if slow:
                with self.ema.swapped():
                    hinted, more = score(policy.backend, slow)
                fields["privileged"].update(hinted)
                spent += more
            self.counts["lm_privileged_tokens"] += spent
        if objective is not None and "thought" in objective.needs:  # alignopsd matches turns by what they say
            fields["thought"] = self.embedder(list(texts))
        sampled = sum(len(generations) for generations in steps)  # zero-advantage completions weigh in the mean too
        stats = self.grpo.update(pairs, np.array(weights), objective=objective, fields=fields, sampled=sampled)
        if self.ema is not None:
            self.ema.update()
        self.policy.weights_changed()
        self.counts["policy_updates"] += 1
        self.counts["lm_completions_trained"] += len(pairs)
        self.counts["lm_train_tokens"] += stats["tokens"]
        return {**stats, "lm_completions": len(pairs)}

    def targets(self, messages: list, replies) -> list:
        """Token ids of other replies to the same prompts, one per completion (None: no target, empty ids): sero's
        oracle, distil's teacher samples, diamond_sd's retrieved replies, evidence_diagnosis's rubric rewrites, which
        the update scores under each completion's own prompt (agents/learners/hf_grpo.py)."""
        return [ids for _, ids in self.grpo.encode(messages, [r or "" for r in replies])]

    def state_dict(self) -> dict:
        from peft import get_peft_model_state_dict

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        head = self.grpo.critic
        return {"adapter": to_cpu(get_peft_model_state_dict(self.grpo.model)),
                "critic": None if head is None else to_cpu(head.state_dict()),
                "optimizer": self.grpo.learner.state_dict(), "counts": dict(self.counts), "cuda_rng": cuda,
                "ema": None if self.ema is None else self.ema.state_dict(),
                "memory": None if self.memory is None else self.memory.state_dict()}

    def load_state_dict(self, state: dict) -> None:
        from peft import set_peft_model_state_dict

        set_peft_model_state_dict(self.grpo.model, {k: v.to(self.grpo.device) for k, v in state["adapter"].items()})
        if self.grpo.critic is not None:
            self.grpo.critic.load_state_dict(state["critic"])
        self.grpo.learner.load_state_dict(state["optimizer"])
        if self.ema is not None:
            self.ema.load_state_dict(state["ema"])
        if self.memory is not None:
            self.memory.load_state_dict(state["memory"])
        self.counts = dict(state["counts"])
        if state["cuda_rng"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])
        self.policy.generations, self.actions = [], []
        self.policy.weights_changed()


def effect_ids(effects) -> np.ndarray:
    """[n] empo's effect ids from (role, the state's summary, the parsed action or None: a forfeit, whatever
    the text): within a group (one problem) two completions with the same key did the same thing (wordmath:
    the same expression written, the same answer given; a forfeit leaves the state as it was)."""
    index: dict = {}
    return np.array([index.setdefault(e, len(index)) for e in effects], dtype=np.int64)
