"""What every policy objective reads: one round's sampled steps, and the reductions they share.

A round of M market steps; step m's action is a completion of L tokens (right-padded, ``mask``),
L = 1 for rule-logit policies whose action is one token (:meth:`PolicyBatch.one_token`). The
first eight fields every learning round has; the rest are *signals* that only some worlds or
policies provide, and an objective module names the ones it reads in ``NEEDS`` so a run whose world
lacks them is refused before it starts (``agents.objectives.require``), not half-way through.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch

from agents.credit.base import MissingSignals as CreditMissingSignals
from skills.credit import EPS


class MissingSignals(CreditMissingSignals):
    """An objective needs batch fields the world (or policy) does not provide.

    A subclass of the credit estimators' error: one ``except`` refuses a run for either reason."""


@dataclass
class PolicyBatch:
    """One round's sampled steps as an objective reads them: M steps, each a completion of up to L tokens.

    The first eight fields every learning round has; every field after them is an optional signal (None where the
    world or policy gives none), named in an objective's ``NEEDS``. The learners build it (agents/learners/lm_grpo.py for
    LLM agents, ``PolicyBatch.one_token`` for rule-logit policies); an objective receives it and returns
    ``(loss, stats)``. Shapes are checked when it is made.

    Args:
        logp: [M, L] log-probability of each sampled token under the current policy (with grad).
        old_logp: [M, L] the same under the behaviour policy (detached).
        mask: [M, L] which tokens are real.
        advantage: [M] the configured credit's step advantage.
        outcome: [M] the episode's outcome, broadcast to its steps.
        group: [M] the group of rollouts of one task each step belongs to.
        episode: [M] the rollout each step belongs to.
        entropy: [M, L] the policy's entropy at each token (detached).
        **signals: Any of the optional fields below, each documented where it is declared.

    Raises:
        ValueError: A field's shape does not match M (and L).
    """

    logp: torch.Tensor
    """[M, L] log-probability of each sampled token under the current policy (with grad)."""
    old_logp: torch.Tensor
    """[M, L] the same under the behaviour policy that sampled it (detached)."""
    mask: torch.Tensor
    """[M, L] bool: which tokens are real (the rest is padding)."""
    advantage: torch.Tensor
    """[M] the configured credit's step advantage, already group-normalised."""
    outcome: torch.Tensor
    """[M] the episode's outcome (binary success or a real score), broadcast to its steps."""
    group: torch.Tensor
    """[M] int: the group of G rollouts of one task the step belongs to."""
    episode: torch.Tensor
    """[M] int: the rollout the step belongs to."""
    entropy: torch.Tensor
    """[M, L] the policy's entropy at each token (detached)."""
    # --- signals ------------------------------------------------------------------------------
    effect: torch.Tensor | None = None
    """[M] int: id of the executed effect (same parsed action and same next state -> same id; empo)."""
    ref_logp: torch.Tensor | None = None
    """[M, L] log-probability under the reference policy (grpo's KL)."""
    token_logits: torch.Tensor | None = None
    """[M, L] a critic's logit of success at each token, read from the prefix through it (with grad; tppo)."""
    value_logits: torch.Tensor | None = None
    """[M, L] the same critic's logit at the state *before* each token: the prompt and the tokens before it
    (with grad; pact's V(s_t), the baseline of token t that token t cannot move)."""
    state: torch.Tensor | None = None
    """[M] int: id of the state the step acted in (within a group, equal ids: the same state; focus)."""
    oracle_logp: torch.Tensor | None = None
    """[M, L'] log-probability under the current policy of an executable oracle's continuation (sero)."""
    oracle_mask: torch.Tensor | None = None
    """[M, L'] bool: real oracle tokens; a row with none is a step with no oracle continuation."""
    oracle_weight: torch.Tensor | None = None
    """[M] the frozen policy's likelihood of the oracle prefix (sero)."""
    item_logits: torch.Tensor | None = None
    """[M, K] scores of the K candidate items (with grad; ca_pg)."""
    target: torch.Tensor | None = None
    """[M] int: index of the held-out item among the candidates, -1 where it is not among them (ca_pg)."""
    list_len: int | None = None
    """L: the length of the recommended list (ca_pg)."""
    # privileged passes (agents/backends/base.py ``forced``): the same sampled tokens, scored by the current policy
    # (detached) under a prompt holding what the acting agent did not see; an episode's steps are in time order
    teacher_logp: torch.Tensor | None = None
    """[M, L] under the step's prompt plus the correct output at its state (agentopsd, cepo)."""
    hindsight_logp: torch.Tensor | None = None
    """[M, L] under the step's prompt plus the episode's outcome, the feedback that came later (trial)."""
    sibling_logp: torch.Tensor | None = None
    """[M, L] under the step's prompt plus a failed sibling's answer in its group (cepo; with no failed
    sibling, the teacher's own: no contrast)."""
    hint_logp: torch.Tensor | None = None
    """[M, L] under the step's prompt plus the correct output at its state as feedback, by an EMA of the policy's
    weights (hint_sd's teacher)."""
    located: torch.Tensor | None = None
    """[M] bool: the world's fault locator: the step belongs to a failed episode and its reply does not do what the
    correct output at its state does (hint_sd distils these alone)."""
    teacher_sample_logp: torch.Tensor | None = None
    """[M, L'] log-probability under the current policy, *without* the privileged paragraph (with grad), of a
    completion the policy sampled *with* it: the teacher's sample for the step's state (distil)."""
    teacher_sample_mask: torch.Tensor | None = None
    """[M, L'] bool: the teacher sample's real tokens; a row with none: the step has no teacher sample."""
    teacher_verified: torch.Tensor | None = None
    """[M] bool: the world judges the step's teacher sample correct (it does what the correct output does)."""
    belief_before: torch.Tensor | None = None
    """[M] the policy's belief in the gold final answer where the step began: the answer's mean per-token
    log-probability after the step's prompt (stop_segment, rredcot)."""
    belief_after: torch.Tensor | None = None
    """[M] the same once the step's reply is in the prompt: what its commitment did to the belief."""
    grounding: torch.Tensor | None = None
    """[M] the share of the step's reply's content words and numbers that occur in what its agent read, 1 where it has
    none (agents/llm/privileged_pass.py ``grounding``; evidence_diagnosis)."""
    rubric_sample_logp: torch.Tensor | None = None
    """[M, L'] log-probability under the current policy, without the rubric (with grad), of a rewrite the policy sampled
    with the world's rubric for the step in its prompt (evidence_diagnosis)."""
    rubric_sample_mask: torch.Tensor | None = None
    """[M, L'] bool: the rewrite's real tokens; a row with none: the step has no rewrite."""
    rubric_sample_grounding: torch.Tensor | None = None
    """[M] the rewrite's own grounding (0 where there is none)."""
    branch: torch.Tensor | None = None
    """[M] bool: the step's rollout restarted from a state another one reached (``agents.branches``; process_branching)."""
    context_edit: torch.Tensor | None = None
    """[M] bool: the step edited the context its rollout's later prompts read (a text world's ``edit_roles``;
    contextpilot)."""
    thought: torch.Tensor | None = None
    """[M, D] the step's reply as text embedded by the frozen sentence embedder (MiniLM, agents/learners/bid_head.py; unit
    vectors, D = 384): two steps that say the same thing are near, wherever they fall in their rollouts (alignopsd)."""
    subgoals: torch.Tensor | None = None
    """[M] int: id of the step's canonical state: its problem, its role and the order-free sub-goals achieved before it
    (equal ids: the same canonical state, in whatever order the rollouts reached it; diamond_sd)."""
    breakpoint: torch.Tensor | None = None
    """[M] bool: the step at which a failed episode left the success-reachable region of the state graph (diamond_sd)."""
    retrieved_logp: torch.Tensor | None = None
    """[M, L'] log-probability under the current policy (with grad), under the step's own prompt, of the reply an own
    verified success made at the step's canonical state: a recovery step's target (diamond_sd)."""
    retrieved_mask: torch.Tensor | None = None
    """[M, L'] bool: the retrieved reply's real tokens; a row with none: not a recovery step, or nothing retrieved."""

    def __post_init__(self):
        M, L = self.logp.shape
        for name in ("old_logp", "mask", "entropy", "ref_logp", "token_logits", "value_logits", *PER_TOKEN):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != (M, L):
                raise ValueError(f"PolicyBatch.{name} has shape {tuple(value.shape)}, logp {(M, L)}")
        for name in ("teacher_sample", "rubric_sample", "retrieved"):
            sample, sample_mask = getattr(self, f"{name}_logp"), getattr(self, f"{name}_mask")
            if sample is not None and sample_mask is not None and sample.shape != sample_mask.shape:
                raise ValueError(f"PolicyBatch.{name}_mask has shape {tuple(sample_mask.shape)}, "
                                 f"{name}_logp {tuple(sample.shape)}")
        for name in ("advantage", "outcome", "group", "episode", "effect", "state", "oracle_weight", "target", "branch",
                     "context_edit", "located", "teacher_verified", *BELIEF, *GROUNDED, "subgoals", "breakpoint"):
            value = getattr(self, name)
            if value is not None and tuple(value.shape) != (M,):
                raise ValueError(f"PolicyBatch.{name} has shape {tuple(value.shape)}, expected ({M},)")
        if self.thought is not None and (self.thought.dim() != 2 or len(self.thought) != M):
            raise ValueError(f"PolicyBatch.thought has shape {tuple(self.thought.shape)}, expected ({M}, D)")

    @classmethod
    def one_token(cls, **fields) -> PolicyBatch:
        """Rule-logit policies: [M] per-step log-probs and entropies become [M, 1], every token real.

        Args:
            **fields: The batch's fields, per-token ones given per step ([M]).

        Returns:
            The batch with L = 1.
        """
        fields = {k: v[:, None] if k in TOKENS and v is not None and v.dim() == 1 else v for k, v in fields.items()}
        fields.setdefault("mask", torch.ones_like(fields["logp"], dtype=torch.bool))
        return cls(**fields)

    def provided(self) -> set[str]:
        """The names of the fields this batch carries (not None): what ``NEEDS`` is checked against."""
        return {f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None}


BELIEF = ("belief_before", "belief_after")
PER_TOKEN = ("teacher_logp", "hindsight_logp", "sibling_logp", "hint_logp")
PRIVILEGED = (*PER_TOKEN, *BELIEF)
"""The signals a privileged pass scores (agents/llm/privileged_pass.py asks for them, agents/learners/hf_grpo.py lays them out)."""
JUDGED = ("located", "teacher_verified", "breakpoint")
"""Per-step verdicts on what was written: the world's verifier's (agents/llm/privileged_pass.py), the state graph's
(diamond_sd's breakpoint)."""
SAMPLED = ("teacher_sample_logp", "teacher_sample_mask", "rubric_sample_logp", "rubric_sample_mask")
"""A completion the policy samples under a privileged prompt, scored under the step's own (agents/learners/hf_grpo.py)."""
RETRIEVED = ("retrieved_logp", "retrieved_mask")
"""An own verified success's reply at the step's canonical state, scored under the step's prompt (agents/learners/hf_grpo.py)."""
GROUNDED = ("grounding", "rubric_sample_grounding")
"""Per-step grounding of a reply in what its agent read, one number each (agents/llm/privileged_pass.py ``grounding``)."""
TOKENS = ("logp", "old_logp", "mask", "entropy", "ref_logp", "token_logits", "value_logits", "oracle_logp", "oracle_mask",
          *SAMPLED, *PER_TOKEN, *RETRIEVED)
SIGNALS = tuple(f.name for f in dataclasses.fields(PolicyBatch) if f.default is None)


def step_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """[M, L] -> [M]: the mean over each step's real tokens (padding may hold -inf: it is never read)."""
    return torch.where(mask, x, 0).sum(1) / mask.sum(1).clamp(min=1)


def token_mean(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean over every real token of the batch (token-level objectives: each token counts once)."""
    return torch.where(mask, x, 0).sum() / mask.sum().clamp(min=1)


def clipped(ratio: torch.Tensor, advantage: torch.Tensor, clip: float) -> torch.Tensor:
    """PPO's pessimistic surrogate, elementwise: min(rho A, clip(rho, 1 - clip, 1 + clip) A)."""
    return torch.minimum(ratio * advantage, ratio.clamp(1 - clip, 1 + clip) * advantage)
