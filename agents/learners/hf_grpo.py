"""GRPO on a causal LM (the hf backend's SmolLM2): the update step of the LM learner (agents/learners/lm_grpo.py).

One market step of an LLM agent is one completion; its importance ratio is step-level and
length-normalised, rho = exp(mean over its tokens of (log pi - log pi_old)), so a long
completion does not explode the ratio; optional KL to the model without adapters (``agents.objectives.kl.k3``).
The surrogate is grpo's (agents/objectives/grpo.py); another ``agents.objective`` replaces it.

grpo's surrogate scores the completions at the temperature they were sampled at (``temperature``): the policy
that acted is softmax(logits / T), and its gradient is the one the advantages weigh.
"""

from __future__ import annotations

import collections
import copy

import numpy as np
import torch
from torch.nn import functional as F

from agents.learners.critic import TokenCritic, wanted
from agents.learners.base import AdamStep, autocast
from agents.objectives.batch import BELIEF, GROUNDED, JUDGED, PolicyBatch, step_mean
from agents.objectives.grpo import surrogate
from agents.objectives.kl import k3, penalised


class HFGRPO:
    """GRPO on a causal LM (the hf backend's SmolLM2): LoRA adapters through ``peft``, or full fine-tuning.

    One market step of an LLM agent is one completion; its importance ratio is step-level and
    length-normalised, rho = exp(mean over its tokens of (log pi - log pi_old)), so a long
    completion does not explode the ratio. The reference for the KL is the model without adapters
    (LoRA) or a frozen copy (full), estimated per token by k3 = exp(d) - d - 1, d = log pi_ref - log pi.

    LoRA is injected into the model in place (peft), so whoever holds the model (the backend that
    generates and scores for the agents) acts with the adapted weights from the next call on. Adapters
    are float32 whatever the model's dtype (peft's autocast_adapter_dtype). One update runs its batch in
    chunks of ``chunk`` completions, gradients accumulated, then one clipped Adam step.
    """

    def __init__(self, model, tokenizer, lr: float = 1e-4, clip: float = 0.2, kl: float = 0.0,
                 lora_rank: int = 8, max_grad_norm: float = 1.0, chunk: int = 8, critic: bool = False,
                 temperature: float = 1.0):
        """``critic``: a token critic on the LM's last hidden states (agents/learners/critic.py) for objectives that
        read ``token_logits`` or ``value_logits`` (tppo, pact), trained with the adapters by the same Adam.
        ``temperature``: the completions' sampling temperature, at which grpo's surrogate scores them (the other
        objectives read log-probabilities at 1, as the privileged passes that they compare with score them)."""
        self.tokenizer, self.clip, self.kl, self.chunk = tokenizer, clip, kl, chunk
        self.temperature = temperature
        self.device = next(model.parameters()).device
        self.reference = None
        if lora_rank:
            from peft import LoraConfig, get_peft_model

            model = get_peft_model(model, LoraConfig(r=lora_rank, lora_alpha=2 * lora_rank, lora_dropout=0.0,
                                                      target_modules=["q_proj", "v_proj"]))
        else:
            if next(model.parameters()).dtype in (torch.bfloat16, torch.float16):
                raise ValueError("full fine-tuning (lora_rank = 0) of a half-precision model: Adam's updates would "
                                 "round away in its weights; load it in float32 or use LoRA")
            if kl:
                self.reference = copy.deepcopy(model).eval().requires_grad_(False)
        self.model = model.eval()  # no dropout: acting and training see one function
        self.critic = TokenCritic(model.config.hidden_size).to(self.device) if critic else None
        params = [p for p in model.parameters() if p.requires_grad] + (list(self.critic.parameters()) if critic else [])
        self.learner = AdamStep(params, lr, max_grad_norm)  # no rows

    def encode(self, prompts: list[list[dict]], completions: list[str],
               ended: list[bool] | None = None) -> list[tuple[list[int], list[int]]]:
        """Chat messages and completion texts -> (prompt ids, completion ids) pairs; a completion that ``ended``
        (the engine stopped it, not its token cap) is followed by the end of its turn, the tokenizer's EOS (the
        chat template's end of an assistant turn), so the step that ended the reply is trained with the rest:
        without it a policy learns what to write but never where to stop, and a reply that runs on to the
        token cap is refused. The engine stops at EOS or at the role's stop string and returns the text only;
        EOS is what a chat model ends a turn with, and either ends the reply the same way."""
        pairs = []
        for i, (messages, text) in enumerate(zip(prompts, completions)):
            prefix = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
            pairs.append((self.tokenizer(prefix, add_special_tokens=False)["input_ids"],
                          ids + [self.tokenizer.eos_token_id] if ended is not None and ended[i] else ids))
        return pairs

    def token_logprobs(self, pairs, model=None, entropy: bool = False, hidden: bool = False,
                       temperature: float = 1.0) -> tuple[torch.Tensor, ...]:
        """Per completion token log-probabilities [n, L] under softmax(logits / ``temperature``) and their mask
        [n, L], L = the longest completion
        (and with ``entropy`` the policy's entropy at each of those tokens, [n, L], detached; with ``hidden``
        the last hidden states [n, L + 1, H] at the last prompt token and at each completion token: the LM head's
        input there, position j having read the prefix through token j).

        Rows are left-padded so every completion ends at the right edge: the LM head runs over the last
        L + 1 positions only (``logits_to_keep``), never the 49k-wide vocabulary over prompt tokens."""
        model = model or self.model
        seqs = [p + c for p, c in pairs]
        width, L = max(len(s) for s in seqs), max(max(len(c) for _, c in pairs), 1)
        ids = torch.full((len(seqs), width), self.tokenizer.pad_token_id or 0, dtype=torch.long)
        attention = torch.zeros_like(ids)
        target = torch.zeros((len(seqs), L), dtype=torch.bool)
        for i, ((_, c), s) in enumerate(zip(pairs, seqs)):
            ids[i, width - len(s):], attention[i, width - len(s):] = torch.tensor(s), 1
            target[i, L - len(c):] = True
        ids, attention, target = ids.to(self.device), attention.to(self.device), target.to(self.device)
        position = (attention.cumsum(-1) - 1).clamp(min=0)
        states = []  # the LM head's input, [n, L + 1, H], when asked for
        hook = model.get_output_embeddings().register_forward_pre_hook(lambda _, args: states.append(args[0])) if hidden else None
        try:
            with autocast(self.device):
                logits = model(input_ids=ids, attention_mask=attention, position_ids=position, use_cache=False,
                               logits_to_keep=L + 1).logits[:, :-1].float() / temperature  # position j predicts token j + 1
        finally:
            if hook is not None:
                hook.remove()
        every = torch.log_softmax(logits, -1)
        logp = every.gather(2, ids[:, width - L:, None])[..., 0]
        out = (logp, target) + ((-(every.exp() * every).sum(-1).detach(),) if entropy else ())
        return out + ((states[0],) if hidden else ())

    def update(self, pairs, advantage: np.ndarray, old_logp: torch.Tensor | None = None, objective=None,
               fields: dict | None = None, sampled: int | None = None) -> dict:
        """One GRPO step on completions ``pairs`` with their advantages [n] (group-relative, from the caller).

        ``sampled``: how many completions the round sampled, of which ``pairs`` are those with an advantage (the
        rest add nothing to the gradient and are not run); grpo's loss is the mean over all of them, so a round
        in which few groups had contrast moves the weights less than one in which all had (None: ``pairs`` are
        all). Dividing by the trained ones alone gave each lone contrasting group a whole round's step.

        ``old_logp`` [n]: the behaviour policy's per-step log-probabilities; None: the current ones
        (on-policy, one epoch: the ratio is 1 and the step is the plain policy gradient, clipped later).
        ``objective``: another of agents/objectives (``agents.objective``) in grpo's place, on a PolicyBatch
        of the completions' tokens and ``fields`` (outcome, group, episode [n]; signals such as effect)."""
        if objective is not None and objective.name != "grpo":
            return self._objective_step(objective, pairs, advantage, fields or {})
        advantage = torch.as_tensor(advantage, dtype=torch.float32, device=self.device)
        n = len(pairs)
        total = max(sampled or n, n)
        self.learner.opt.zero_grad(set_to_none=True)
        totals = collections.Counter()
        for i in range(0, n, self.chunk):
            part = pairs[i:i + self.chunk]
            logp, mask = self.token_logprobs(part, temperature=self.temperature)
            per_step = step_mean(logp, mask)
            old = per_step.detach() if old_logp is None else old_logp[i:i + len(part)].to(self.device)
            kl = self._reference_kl(part, logp, mask, self.temperature) if self.kl else None
            loss, stats = surrogate(per_step, old, advantage[i:i + len(part)], self.clip, kl, self.kl)
            (loss * len(part) / total).backward()  # the chunks' mean losses, weighted: the mean over the round
            totals.update({k: v * len(part) / n for k, v in stats.items()})
        stats = dict(totals)
        stats["grad_norm"] = self.learner.step()
        stats["tokens"] = int(sum(len(p) + len(c) for p, c in pairs))
        return stats

    def coast(self) -> None:
        """One Adam step on a zero gradient, for a round whose completions carry none (no group had contrast):
        the moments decay and the weights move on along them, as a trainer that steps on every batch does, so the
        step count and the bias correction that Adam's step size assumes are the rounds', not the lucky rounds'."""
        for p in self.learner.params:
            p.grad = torch.zeros_like(p)
        self.learner.step()
        self.learner.opt.zero_grad(set_to_none=True)

    def _reference_kl(self, pairs, logp: torch.Tensor, mask: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        """[n] per-completion mean of the k3 estimate exp(d) - d - 1, d = log pi_ref - log pi, per token (the
        reference scored at ``temperature``, as ``logp`` was)."""
        if self.reference is None:
            with self.model.disable_adapter():
                ref = self._scored(pairs, temperature=temperature)[0]
        else:
            ref = self._scored(pairs, self.reference, temperature=temperature)[0]
        return step_mean(k3(logp, ref), mask)

    @torch.no_grad()
    def _scored(self, pairs, model=None, entropy: bool = False, hidden: bool = False,
                temperature: float = 1.0) -> list[torch.Tensor]:
        """:meth:`token_logprobs` over all ``pairs`` in chunks, without grad, each chunk left-padded to the batch's
        longest completion (completions end at the right edge: padding is masked out) and concatenated."""
        parts = [self.token_logprobs(pairs[i:i + self.chunk], model, entropy, hidden, temperature)
                 for i in range(0, len(pairs), self.chunk)]
        L = max(part[0].shape[1] for part in parts)

        def left_pad(x: torch.Tensor) -> torch.Tensor:  # [m, l] -> [m, L]; hidden states [m, l + 1, H] -> [m, L + 1, H]
            width = L + (x.dim() == 3)
            return F.pad(x, (0, 0) * (x.dim() - 2) + (width - x.shape[1], 0))

        return [torch.cat([left_pad(part[k]) for part in parts]) for k in range(len(parts[0]))]

    def _objective_step(self, objective, pairs, advantage: np.ndarray, fields: dict) -> dict:
        """``objective`` on the whole batch at once, on-policy (old = current, detached): its loss reads
        classes of completions (a group's, an effect's) that a chunk boundary would split. Plus ``kl`` x
        the per-token k3 KL to the model without adapters, as in grpo.

        Memory stays one chunk's: the batch is scored without grad, the loss is differentiated with respect
        to its log-probabilities (leaves), and each chunk is then run again with grad and backpropagated
        from its share of that gradient (the chain rule: the same step as one pass over the whole batch,
        which at wordmath's 16 worlds a round held 20 GB).

        Signals: ``effect`` and ``state`` ids from ``fields``; ``token_logits`` from the critic on each prefix through a token,
        ``value_logits`` on each prefix before one (the state it was sampled in); for sero, ``fields["oracle"]``
        holds each completion's oracle continuation (token ids, empty: none), scored under the current policy,
        weighted by its per-token likelihood before this step (the frozen policy's, detached); for distil,
        ``fields["teacher_sample"]`` holds each completion's teacher sample (token ids, empty: none), scored under the
        current policy with grad as the oracle is (diamond_sd's ``fields["retrieved"]``, the replies retrieved from own
        successes, and evidence_diagnosis's ``fields["rubric_sample"]``, the rubric's rewrites, too); ``subgoals`` ids;
        ``grounding`` and ``rubric_sample_grounding`` [n] float; ``located``, ``teacher_verified``, ``breakpoint``,
        ``branch`` and ``context_edit`` [n] bool from ``fields``; ``fields["privileged"]``
        maps a privileged signal (teacher_logp ...) to each completion's per-token log-probabilities (agents/llm/privileged_pass.py);
        ``fields["thought"]``: each completion's text embedded by the frozen MiniLM (alignopsd)."""
        critic = self.critic is not None and wanted(objective)
        old, mask, entropy, *hidden = self._scored(pairs, entropy=True, hidden=critic)
        leaves = {"completion": (pairs, old.clone().requires_grad_())}
        tensor = lambda v, dtype: torch.as_tensor(np.asarray(v), dtype=dtype, device=self.device)  # noqa: E731
        signals = {k: tensor(v, torch.long) for k, v in fields.items() if k in ("effect", "state", "subgoals")}
        if "thought" in fields:  # the replies' frozen sentence embeddings, [n, D]
            signals["thought"] = tensor(fields["thought"], torch.float32)
        signals.update({k: tensor(v, torch.bool) for k, v in fields.items() if k in (*JUDGED, "branch", "context_edit")})
        signals.update({k: tensor(v, torch.float32) for k, v in fields.items() if k in GROUNDED})
        if critic:
            logits = self.critic(hidden[0])  # [n, L + 1]: the prompt's last token, then each completion token
            signals.update(token_logits=logits[:, 1:], value_logits=logits[:, :-1])
        for name in ("oracle", "teacher_sample", "retrieved", "rubric_sample"):  # other completions of the same prompts, scored with grad
            if name in fields:
                other = [(p, o) for (p, _), o in zip(pairs, fields[name])]
                other_logp, other_mask = self._scored(other)
                leaves[name] = other, other_logp.clone().requires_grad_()
                signals.update({f"{name}_logp": leaves[name][1], f"{name}_mask": other_mask})
        if "oracle" in fields:
            signals["oracle_weight"] = step_mean(signals["oracle_logp"].detach(), signals["oracle_mask"]).exp()
        for name, rows in fields.get("privileged", {}).items():  # per-token arrays, right-aligned as the completions
            if name in BELIEF:  # one number per step
                signals[name] = tensor(rows, torch.float32)
                continue
            signals[name] = torch.zeros_like(old)
            for i, row in enumerate(rows):
                if len(row):
                    signals[name][i, old.shape[1] - len(row):] = torch.as_tensor(row, dtype=old.dtype)
        logp = leaves["completion"][1]
        batch = PolicyBatch(logp=logp, old_logp=old, mask=mask, entropy=entropy,
                            advantage=tensor(advantage, torch.float32), outcome=tensor(fields["outcome"], torch.float32),
                            group=tensor(fields["group"], torch.long), episode=tensor(fields["episode"], torch.long),
                            **signals)
        loss, stats = objective(batch)
        if self.kl:
            kl = self._reference_kl(pairs, logp, mask)
            loss = penalised(loss, kl, self.kl)
            stats["kl"] = float(kl.detach().mean())
        self.learner.opt.zero_grad(set_to_none=True)
        loss.backward()  # into the critic, and into the leaves: then chunk by chunk through the LM
        for scored, leaf in leaves.values():
            for i in range(0, len(scored) if leaf.grad is not None else 0, self.chunk):
                part = self.token_logprobs(scored[i:i + self.chunk])[0]
                part.backward(leaf.grad[i:i + len(part), leaf.shape[1] - part.shape[1]:])
        stats = {k: float(v) for k, v in stats.items()}
        stats["grad_norm"] = self.learner.step()
        stats["tokens"] = int(sum(len(p) + len(c) for p, c in pairs))
        return stats
