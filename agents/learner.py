"""The torch learner: bid heads by REINFORCE on the softmax auction, policies by group-relative PG.

Training alternates (DESIGN.md, "Learner"): one market round collects B = (tasks x G) rollouts in
lockstep, then one update, then the next round. The three objectives, each a small function:

**Bids** (:func:`bid_objective`). Under softmax clearing the winner of auction s is drawn with
P_s(i) = softmax_{i eligible}(bid_i / temperature), bid_i = min(head bid, wealth cap). REINFORCE::

    L_bid = - mean_s A_s log P_s(winner_s) - entropy x mean_s H(P_s)

with A_s either ``global``: the episode's outcome (its summed world reward) minus the mean over its
group of G rollouts of the same task; or ``local``: the winner's bucket-brigade profit from that
step, the market's own credit signal (:func:`bucket_brigade_profit`), divided by its std over the
round (sign kept: profitable wins are reinforced). An agent whose bid sits at its wealth cap gets
no gradient there: the cap, not the head, set its bid.

**Actions** (:func:`grpo_objective`). Group-relative, step-level PPO clipping (GRPO without a
critic): A_b = (r_b - mean_g r) / (std_g r + eps) over the G rollouts of a task, broadcast to the
episode's steps; ratio_s = pi(a_s) / pi_old(a_s) once per market step (for an LM: over the whole
completion, length-normalised); optional KL(pi || reference). ``rule`` policies: per-agent action
logits theta[i] over the world's actions, added to ``rule_logit`` on the rule's own action (the
reference policy is the rule alone, so the KL keeps an agent near its rule). ``hf`` policies: the
LM's weights, LoRA through ``peft`` or full (:class:`HFGRPO`).

**The update** (:meth:`Learner.step`): zero grads, backward, clip the global grad norm, Adam step.
Device: ``cuda`` when available with bf16 autocast for the forward passes, else CPU; the same
code path (a learner with no gradient work stays on the CPU: :func:`pick_device`). Parameters whose rows grow with the population keep their Adam moments (padded), and a
recycled row's moments are zeroed when a newborn takes it.
"""

from __future__ import annotations

import collections
from contextlib import nullcontext

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

from skills.credit import advantages

EPS = 1e-6


def pick_device(name: str = "auto", gradients: bool = True) -> torch.device:
    """``auto``: cuda when available and the learner has gradient work for it, else the CPU.

    A learner without gradients (value bids over rule actions: ``value_step`` touches only the rows
    of the round's turns) is bound by kernel launches on a GPU. There it ran 5-8x slower than on the
    CPU (``benchmarks/learner.py``) and its float32 sums, taken in another order, changed the blocks
    economy's ledgers, so ``auto`` keeps it on the CPU: the same ledger hash on every machine.
    """
    cuda = name == "cuda" or (name == "auto" and gradients and torch.cuda.is_available())
    return torch.device("cuda" if cuda else "cpu")


def autocast(device: torch.device):
    """bf16 autocast on cuda (the matmuls), nothing on CPU: one code path for both."""
    return torch.autocast("cuda", dtype=torch.bfloat16) if device.type == "cuda" else nullcontext()


# --------------------------------------------------------------------------------- advantages
def group_advantage(outcome: np.ndarray, group: int, normalize: bool) -> np.ndarray:
    """[B] outcomes -> [B] advantages relative to their group of G consecutive rollouts (0: the whole round).

    ``normalize``: (r - mean) / (std + eps) (GRPO); otherwise r - mean (the bid baseline).
    Groups whose rollouts all scored the same get zero advantage: nothing to contrast.
    """
    r = np.asarray(outcome, dtype=np.float64)
    g = r.reshape(-1, group or r.size)
    return (advantages(g, EPS) if normalize else g - g.mean(axis=1, keepdims=True)).reshape(-1)


def tree_advantage(outcome: np.ndarray, source: np.ndarray, prefix: np.ndarray, t: np.ndarray, b: np.ndarray,
                   group: np.ndarray) -> np.ndarray:
    """[S] advantages of the acting steps (t [S], b [S]) of a round whose worlds branch (``Trace.source``,
    ``Trace.prefix``, [B] each; ``outcome`` [B], ``group`` [B] ids).

    A step is worth the mean outcome of the rollouts below the state it led to: for step t of a full rollout,
    the rollout and those of its branches that kept more than t of its steps (they passed through that
    state); for a branch's own step, the branch alone. Then, as GRPO's, relative to the outcomes of the
    step's group (its full rollouts and their branches): A = (V - mean_g) / (std_g + eps). A shared prefix
    step is thus judged by several rollouts, and where branches of one state part ways each move is judged
    by the rollouts it led to.
    """
    r = np.asarray(outcome, dtype=np.float64)
    own = source[b] != b  # a branch's own step
    below = (source[None, :] == b[:, None]) & (prefix[None, :] > t[:, None]) & ~own[:, None]
    below[np.arange(b.size), b] = True
    value = (below * r).sum(1) / below.sum(1)
    count = np.bincount(group)
    mean = np.bincount(group, r) / np.maximum(count, 1)
    std = np.sqrt(np.bincount(group, (r - mean[group]) ** 2) / np.maximum(count, 1))
    return (value - mean[group[b]]) / (std[group[b]] + EPS)


def bucket_brigade_profit(trace) -> np.ndarray:
    """[T, B] micro-credits each step's winner made from that step, read from the round's payments.

    Everything a holding brings (market/brigade.py: the price paid to buy the world, fees, rewards,
    what the next owner pays for it) is credited to the step that bought it; later steps of the
    holding get 0. Summed per agent this is exactly that agent's BID + FEE + REWARD flows in the
    round's ledger (tested).
    """
    held, _ = trace.payments.holdings(trace.path)
    profit = np.zeros(trace.path.shape, dtype=np.int64)
    profit[held.start, held.world] = held.sold + held.rewards - held.bought - held.fees
    return profit


# ----------------------------------------------------------------------------------- objectives
def bid_objective(bids: torch.Tensor, eligible: torch.Tensor, winner: torch.Tensor, advantage: torch.Tensor,
                  temperature: float, entropy: float) -> tuple[torch.Tensor, dict]:
    """REINFORCE on the softmax clearing: bids [M, N] credits (capped), eligible [M, N], winner [M], A [M]."""
    bids = bids.to(torch.promote_types(bids.dtype, torch.float32))  # bf16 from autocast -> float32; float64 stays
    logits = (bids / temperature).masked_fill(~eligible, float("-inf"))
    logp = F.log_softmax(logits, dim=-1)
    chosen = logp.gather(1, winner[:, None])[:, 0]
    H = -(logp.exp() * logp.masked_fill(~eligible, 0.0)).sum(-1)
    loss = -(advantage * chosen).mean() - entropy * H.mean()
    return loss, {"bid_loss": float(loss.detach()), "clearing_entropy": float(H.detach().mean())}


def grpo_objective(logp: torch.Tensor, old_logp: torch.Tensor, advantage: torch.Tensor, clip: float,
                   kl: torch.Tensor | None = None, kl_coef: float = 0.0) -> tuple[torch.Tensor, dict]:
    """Clipped step-level surrogate: -mean min(rho A, clip(rho, 1 +- clip) A) + kl_coef x mean KL."""
    ratio = torch.exp(logp - old_logp)
    surrogate = torch.minimum(ratio * advantage, ratio.clamp(1 - clip, 1 + clip) * advantage)
    loss = -surrogate.mean()
    if kl is not None and kl_coef:
        loss = loss + kl_coef * kl.mean()
    return loss, {"policy_loss": float(loss.detach()), "ratio": float(ratio.mean().detach()),
                  "kl": float(kl.detach().mean()) if kl is not None else 0.0}


# ------------------------------------------------------------------------------------ the update
class Learner:
    """Adam over a list of parameters, with gradient clipping and row-aware moment bookkeeping."""

    def __init__(self, params: list[nn.Parameter], lr: float, max_grad_norm: float, rows: list[nn.Parameter] = ()):
        """``rows``: the parameters among ``params`` whose first axis is the population's rows (a bid
        head's rows and biases, action logits); only their moments grow and restart with births."""
        self.params, self.lr, self.max_grad_norm = params, lr, max_grad_norm
        self.rows = list(rows)
        self._opt = None

    @property
    def opt(self) -> torch.optim.Adam:
        """Built at first use: constructing a torch optimizer imports torch._dynamo (about 0.9 s), which a run
        whose learner never steps (value bids over rule actions: relay's and blocks' learned runs) need not pay."""
        if self._opt is None:
            self._opt = torch.optim.Adam(self.params, lr=self.lr)
        return self._opt

    def step(self, loss: torch.Tensor | None = None) -> float:
        """Backward ``loss``, clip, step; ``loss=None``: the gradients are already there (a batch
        accumulated in chunks after ``opt.zero_grad``)."""
        if loss is not None:
            self.opt.zero_grad(set_to_none=True)
            loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(self.params, self.max_grad_norm)
        self.opt.step()
        return float(norm)

    @torch.no_grad()
    def sync_rows(self, fresh: np.ndarray | None = None) -> None:
        """After the population grew or recycled rows: pad Adam's moments to the parameters' new row
        count, and zero the moments of ``fresh`` rows (a newborn does not inherit a dead agent's momentum)."""
        if self._opt is None:  # not built yet: no moments to pad or zero
            return
        for p in self.rows:
            state = self._opt.state.get(p)
            if not state:
                continue
            for key in ("exp_avg", "exp_avg_sq"):
                m = state[key]
                if m.shape != p.shape:
                    grown = m.new_zeros(p.shape)
                    grown[: m.shape[0]] = m
                    state[key] = m = grown
                if fresh is not None and fresh.size:
                    m[torch.as_tensor(fresh, device=m.device)] = 0

    def state_dict(self) -> dict | None:
        """Adam's state; None while it has never been built (a fresh Adam, which is what loading None restores)."""
        return None if self._opt is None else to_cpu(self._opt.state_dict())

    def load_state_dict(self, state: dict | None) -> None:
        if state is None:
            self._opt = None
        else:
            self.opt.load_state_dict(state)


def to_cpu(obj):
    """A state dict with every tensor moved to CPU (a checkpoint written on a GPU loads anywhere)."""
    if isinstance(obj, torch.Tensor):
        return obj.detach().cpu().clone()
    if isinstance(obj, dict):
        return {k: to_cpu(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(to_cpu(v) for v in obj)
    return obj


# ----------------------------------------------------------------------------------- hf policies
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
                 lora_rank: int = 8, max_grad_norm: float = 1.0, chunk: int = 8, critic: bool = False):
        """``critic``: a token critic on the LM's last hidden states (agents/critic.py) for objectives that
        read ``token_logits`` or ``value_logits`` (tppo, pact), trained with the adapters by the same Adam."""
        import copy

        from agents.critic import TokenCritic

        self.tokenizer, self.clip, self.kl, self.chunk = tokenizer, clip, kl, chunk
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
        self.learner = Learner(params, lr, max_grad_norm)  # no rows

    def encode(self, prompts: list[list[dict]], completions: list[str]) -> list[tuple[list[int], list[int]]]:
        """Chat messages and completion texts -> (prompt ids, completion ids) pairs."""
        pairs = []
        for messages, text in zip(prompts, completions):
            prefix = self.tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
            pairs.append((self.tokenizer(prefix, add_special_tokens=False)["input_ids"],
                          self.tokenizer(text, add_special_tokens=False)["input_ids"]))
        return pairs

    def token_logprobs(self, pairs, model=None, entropy: bool = False, hidden: bool = False) -> tuple[torch.Tensor, ...]:
        """Per completion token log-probabilities [n, L] and their mask [n, L], L = the longest completion
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
                               logits_to_keep=L + 1).logits[:, :-1].float()  # position j predicts token j + 1
        finally:
            if hook is not None:
                hook.remove()
        every = torch.log_softmax(logits, -1)
        logp = every.gather(2, ids[:, width - L:, None])[..., 0]
        out = (logp, target) + ((-(every.exp() * every).sum(-1).detach(),) if entropy else ())
        return out + ((states[0],) if hidden else ())

    def sequence_logprob(self, pairs) -> torch.Tensor:
        """[n] mean log-probability per completion token (the step-level unit of the ratio)."""
        with torch.no_grad():
            return torch.cat([self._per_step(*self.token_logprobs(pairs[i:i + self.chunk]))
                              for i in range(0, len(pairs), self.chunk)])

    @staticmethod
    def _per_step(logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        return (logp * mask).sum(1) / mask.sum(1).clamp(min=1)

    def update(self, pairs, advantage: np.ndarray, old_logp: torch.Tensor | None = None, objective=None,
               fields: dict | None = None) -> dict:
        """One GRPO step on completions ``pairs`` with their advantages [n] (group-relative, from the caller).

        ``old_logp`` [n]: the behaviour policy's per-step log-probabilities; None: the current ones
        (on-policy, one epoch: the ratio is 1 and the step is the plain policy gradient, clipped later).
        ``objective``: another of agents/objectives (``agents.objective``) in grpo's place, on a PolicyBatch
        of the completions' tokens and ``fields`` (outcome, group, episode [n]; signals such as effect)."""
        if objective is not None and objective.name != "grpo":
            return self._objective_step(objective, pairs, advantage, fields or {})
        advantage = torch.as_tensor(advantage, dtype=torch.float32, device=self.device)
        n = len(pairs)
        self.learner.opt.zero_grad(set_to_none=True)
        totals = collections.Counter()
        for i in range(0, n, self.chunk):
            part = pairs[i:i + self.chunk]
            logp, mask = self.token_logprobs(part)
            per_step = self._per_step(logp, mask)
            old = per_step.detach() if old_logp is None else old_logp[i:i + len(part)].to(self.device)
            kl = self._reference_kl(part, logp, mask) if self.kl else None
            loss, stats = grpo_objective(per_step, old, advantage[i:i + len(part)], self.clip, kl, self.kl)
            (loss * len(part) / n).backward()  # the chunks' mean losses, weighted: the batch's mean
            totals.update({k: v * len(part) / n for k, v in stats.items()})
        stats = dict(totals)
        stats["grad_norm"] = self.learner.step()
        stats["tokens"] = int(sum(len(p) + len(c) for p, c in pairs))
        return stats

    def _reference_kl(self, pairs, logp: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """[n] per-completion mean of the k3 estimate exp(d) - d - 1, d = log pi_ref - log pi, per token."""
        if self.reference is None:
            with self.model.disable_adapter():
                ref = self._scored(pairs)[0]
        else:
            ref = self._scored(pairs, self.reference)[0]
        d = ref - logp
        return self._per_step(torch.exp(d) - d - 1, mask)

    @torch.no_grad()
    def _scored(self, pairs, model=None, entropy: bool = False, hidden: bool = False) -> list[torch.Tensor]:
        """:meth:`token_logprobs` over all ``pairs`` in chunks, without grad, each chunk left-padded to the batch's
        longest completion (completions end at the right edge: padding is masked out) and concatenated."""
        parts = [self.token_logprobs(pairs[i:i + self.chunk], model, entropy, hidden) for i in range(0, len(pairs), self.chunk)]
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
        weighted by its per-token likelihood before this step (the frozen policy's, detached)."""
        from agents.critic import wanted
        from agents.objectives import PolicyBatch

        critic = self.critic is not None and wanted(objective)
        old, mask, entropy, *hidden = self._scored(pairs, entropy=True, hidden=critic)
        leaves = {"completion": (pairs, old.clone().requires_grad_())}
        tensor = lambda v, dtype: torch.as_tensor(np.asarray(v), dtype=dtype, device=self.device)  # noqa: E731
        signals = {k: tensor(v, torch.long) for k, v in fields.items() if k in ("effect", "state")}
        if critic:
            logits = self.critic(hidden[0])  # [n, L + 1]: the prompt's last token, then each completion token
            signals.update(token_logits=logits[:, 1:], value_logits=logits[:, :-1])
        if "oracle" in fields:
            oracle_pairs = [(p, o) for (p, _), o in zip(pairs, fields["oracle"])]
            oracle_logp, oracle_mask = self._scored(oracle_pairs)
            leaves["oracle"] = oracle_pairs, oracle_logp.clone().requires_grad_()
            signals.update(oracle_logp=leaves["oracle"][1], oracle_mask=oracle_mask,
                           oracle_weight=self._per_step(oracle_logp, oracle_mask).exp())
        logp = leaves["completion"][1]
        batch = PolicyBatch(logp=logp, old_logp=old, mask=mask, entropy=entropy,
                            advantage=tensor(advantage, torch.float32), outcome=tensor(fields["outcome"], torch.float32),
                            group=tensor(fields["group"], torch.long), episode=tensor(fields["episode"], torch.long),
                            **signals)
        loss, stats = objective(batch)
        if self.kl:
            kl = self._reference_kl(pairs, logp, mask)
            loss = loss + self.kl * kl.mean()
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
