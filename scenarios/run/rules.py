"""Every rule across keys, in one place: how [run], [market], [population], [agents], [skills] and the
scenario's own section fit together.

Each rule reads the effective config (scenarios/run/derived.py has filled the defaults that depend on other
keys) and returns its problem, one line naming the key and the value, or None; :func:`problem` runs them in
order and reports the first. The scenario's own rules (its module's ``validate``) are the last rule, so a
scenario states what its section needs through the same mechanism. A rule within one section lives on its
dataclass (pydantic fields and ``__post_init__``); a rule that needs the built policy is the registry's
(scenarios/registry.py ``make_model``).
"""

from __future__ import annotations

import dataclasses

from agents.config import LEARNER_TABLES, PLUGIN_TABLES, AgentsConfig
from market.money import MAX_MICRO, MICRO
from scenarios.run.experiment import Experiment
from skills.config import SkillsConfig


def _reinforce_bids(exp: Experiment) -> bool:
    return exp.market.bid_scheme == "learned" and exp.agents.bid_objective == "reinforce"


def _needs_groups(exp: Experiment) -> bool:
    """A group-relative advantage: reinforce bids' ``global`` one, or learned actions'."""
    return exp.agents.needs_groups(exp.market.bid_scheme)


def _learned_bids_clear_by_softmax(exp: Experiment) -> str | None:
    """The reinforce head's gradient is that of the softmax auction's probabilities: no other clearing has
    one (value heads regress on what turns earned, under any clearing)."""
    market = exp.market
    if _reinforce_bids(exp) and market.clearing != "softmax":
        return (f"market.clearing = {market.clearing!r}: reinforce bids are trained on the softmax "
                f"auction's probabilities; set market.clearing = \"softmax\" (or agents.bid_objective = \"value\")")


def _scenario_learns_what_is_asked(exp: Experiment) -> str | None:
    """Learned bids need features the scenario's agents can give; learned actions a world of discrete
    actions its policy maps rules onto (scenarios/spec/: bid_features, learned_actions)."""
    agents, scenario = exp.agents, exp.module
    if exp.market.bid_scheme == "learned" and agents.features not in scenario.spec.bid_features:
        if not scenario.spec.bid_features:
            return f"market.bid_scheme = 'learned': scenario {exp.run.scenario!r} has no learned bids"
        return (f"agents.features = {agents.features!r}: scenario {exp.run.scenario!r}'s agents bid from "
                f"{' or '.join(map(repr, scenario.spec.bid_features))} only")
    if agents.actions == "grpo" and scenario.spec.learned_actions == "none":
        return f"agents.actions = 'grpo': scenario {exp.run.scenario!r} has no learned action logits"


def _scenario_has_a_skill_library(exp: Experiment) -> str | None:
    """[skills] evolves a scenario's skill library (scenarios/spec/: skill_library): a scenario without
    one would ignore a changed key (``credit = "none"``, the setting that turns skill evolution off, says so)."""
    if exp.module.spec.skill_library:
        return None
    defaults = SkillsConfig()
    for f in dataclasses.fields(SkillsConfig):
        value = getattr(exp.skills, f.name)
        if value != getattr(defaults, f.name) and (f.name, value) != ("credit", "none"):
            return f"skills.{f.name} = {value!r}: scenario {exp.run.scenario!r} has no skill library"


def _objective_gets_its_signals(exp: Experiment) -> str | None:
    """agents.objective moves learned actions: rule logits give the batch fields and the reference, the LM
    learner (agents/learners/lm_grpo.py) the batch fields and effects: what each provides it declares (``PROVIDES``).
    An objective reading more is refused here, naming it."""
    agents = exp.agents
    if agents.objective == "grpo":
        return None
    from agents.objectives import MissingSignals, check, needs

    scenario = exp.module
    if scenario.spec.objective_signals:  # a learner of the scenario's own trains what those signals score
        if not set(needs(agents.objective)) & set(scenario.spec.objective_signals):
            return (f"agents.objective = {agents.objective!r}: scenario {exp.run.scenario!r} trains only what "
                    f"{', '.join(scenario.spec.objective_signals)} score, which {agents.objective!r} does not read")
        try:
            check(agents.objective, scenario.spec.objective_signals, f"scenario {exp.run.scenario!r}'s own learner")
        except MissingSignals as err:
            return f"agents.objective = {agents.objective!r}: {err}"
        return None
    if agents.actions != "grpo":
        return f"agents.objective = {agents.objective!r}: the objective moves learned actions; set agents.actions = \"grpo\""
    if scenario.spec.learned_actions == "lm":
        from agents.learners.lm_grpo import CompletionLearner as learner
    else:
        from agents.learners.action_logits import ActionLogits as learner
    signals = learner.provides(scenario.spec) + scenario.spec.batch_signals
    signals += ("branch",) if agents.branches else ()  # restarts from a prefix
    try:
        check(agents.objective, signals, f"scenario {exp.run.scenario!r}'s "
              f"{'LoRA learner' if scenario.spec.learned_actions == 'lm' else 'rule-logit policies'}")
    except MissingSignals as err:
        unwritten = set(learner.PROVIDES_WHERE.get("rubric", ())) & set(needs(agents.objective)) and not scenario.spec.rubric
        return f"agents.objective = {agents.objective!r}: {err}" + \
            (" (its world writes no rubric: scenarios/text/world.py TextWorld.rubric)" if unwritten else "")


def _token_price_is_charged(exp: Experiment) -> str | None:
    """Compute is charged where the agents' policy reports the tokens its calls use (``compute()``, market/protocols.py
    Policy), which only its built policy tells (scenarios/registry.py refuses the key there, before a round); a model
    of the scenario's own has no market policy to report them."""
    key = "token_prices" if exp.market.token_prices else "token_price"
    if getattr(exp.market, key) and exp.module.own_model is not None:
        return (f"market.{key} = {getattr(exp.market, key)!r}: scenario {exp.run.scenario!r} runs a model of its "
                f"own, whose agents report no LLM tokens to the market")


def _per_state_logits_have_a_state(exp: Experiment) -> str | None:
    """agents.logits.per_state reads each agent's residual from agents.features: 'agent' features carry no state."""
    if exp.agents.logits.per_state and exp.agents.features == "agent":
        return ("agents.logits.per_state = True: agents.features = 'agent' gives the logits no state to read; "
                "set agents.features = \"numeric\"")


def _features_are_read(exp: Experiment) -> str | None:
    """agents.features is how learned bids see a state, how the critic of learned action logits does
    (agents/learners/critic.py ActionCritic, under an objective that reads one), and how per-state logits do; a run with
    none of them would ignore it."""
    agents = exp.agents
    if agents.features == AgentsConfig().features or exp.market.bid_scheme == "learned" or agents.logits.per_state:
        return None
    if agents.actions == "grpo" and agents.objective != "grpo" and exp.module.spec.learned_actions != "lm":
        from agents.learners.critic import SIGNALS
        from agents.objectives import needs

        if set(SIGNALS) & set(needs(agents.objective)):
            return None
    return (f"agents.features = {agents.features!r}: read only by learned bids (market.bid_scheme = \"learned\") and by "
            f"the critic of learned action logits (agents.actions = \"grpo\" under an objective that reads a critic); "
            f"this run has neither")


WHO_READS = {"value": 'value bids (market.bid_scheme = "learned", agents.bid_objective = "value")',
             "reinforce": 'REINFORCE bids (market.bid_scheme = "learned", agents.bid_objective = "reinforce")',
             "logits": 'learned action logits (agents.actions = "grpo" on a world of rule-logit actions)',
             "lm": 'the LoRA learner (agents.actions = "grpo" on a world of LLM agents)'}


def _learner_tables_are_read(exp: Experiment) -> str | None:
    """Each learner reads its own table of [agents] (agents/config.py LEARNER_TABLES): a changed table of a learner
    the run does not compose would do nothing. The bid tables are checked under learned bids (where the run
    has a bid objective), the tables of learned actions always."""
    agents = exp.agents
    read = agents.tables_read(exp.market.bid_scheme, exp.module.spec.learned_actions)
    checked = ("value", "reinforce", "logits", "lm") if exp.market.bid_scheme == "learned" else ("logits", "lm")
    for name in checked:
        table, default = getattr(agents, name), LEARNER_TABLES[name]()
        changed = [f.name for f in dataclasses.fields(table) if getattr(table, f.name) != getattr(default, f.name)]
        if name not in read and changed:
            return (f"agents.{name}.{changed[0]} = {getattr(table, changed[0])!r}: not read: [agents.{name}] is read "
                    f"only by {WHO_READS[name]}; this run (scenario {exp.run.scenario!r}, market.bid_scheme = "
                    f"{exp.market.bid_scheme!r}, agents.bid_objective = {agents.bid_objective!r}, agents.actions = "
                    f"{agents.actions!r}) does not compose it")


def _device_is_there(exp: Experiment) -> str | None:
    """A learner asked to run on a GPU this torch cannot see would fail after the models load."""
    if exp.agents.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            return "agents.device = 'cuda': this torch sees no CUDA device (use \"auto\" or \"cpu\")"


def _groups_divide_the_batch(exp: Experiment) -> str | None:
    """A group is G consecutive episodes of one round, so a round must hold whole groups, wherever rollouts are
    grouped: a learner's group-relative advantage, a skill library's credit over the training rounds (a probe
    groups its own frozen batch), a model of its own's questions (recsys: G rollouts of each). The one statement
    of the batch/group rule."""
    agents, market, scenario, skills = exp.agents, exp.market, exp.module, exp.skills
    library = scenario.spec.skill_library and (scenario.own_model is not None or
                                               (skills.credit != "none" and skills.evidence == "training"))
    if (_needs_groups(exp) or library) and agents.group and market.batch % agents.group:
        return f"agents.group = {agents.group}: market.batch ({market.batch}) must be a multiple of {agents.group}"


def _skill_groups_fit(exp: Experiment) -> str | None:
    """A skill library's credit (skills/credit.py) compares the G = agents.group rollouts of a question, G >= 2 (unset,
    4: scenarios/run/derived.py), and a round holds whole groups; the LM learner groups the same worlds by the same
    key (the batch holding whole groups: :func:`_groups_divide_the_batch`); a probe (``skills.evidence``) groups its
    own frozen batch, and is for LLM worlds' markets only."""
    skills, agents = exp.skills, exp.agents
    scenario = exp.module
    if not (scenario.spec.skill_library and (scenario.own_model is not None or skills.credit != "none")):
        return None
    if skills.evidence == "probe" and scenario.own_model is not None:
        return (f"skills.evidence = 'probe': scenario {exp.run.scenario!r} gathers its skills' evidence in its own "
                f"pipeline (a frozen probe is for LLM worlds' markets); use \"training\"")
    if agents.group < 2:
        return (f"agents.group = {agents.group}: scenario {exp.run.scenario!r}'s skill library compares the G "
                f"rollouts of a question; set agents.group >= 2")


def _probe_size_is_read(exp: Experiment) -> str | None:
    """skills.probe sizes the frozen probe of ``skills.evidence = "probe"``; with the training rounds as the evidence
    a changed size would do nothing."""
    skills = exp.skills
    if skills.evidence != "probe" and skills.probe != type(skills)().probe:
        return (f"skills.probe = {skills.probe}: not read: it sizes the probe of skills.evidence = \"probe\" "
                f"(now {skills.evidence!r})")


def _branches_can_be_played(exp: Experiment) -> str | None:
    """agents.branches restarts worlds from inner states (the scenario's SPEC.branches) for learned actions, a
    round holding M full rollouts (whole groups) and N branches of each; the tree credits the steps itself, and a
    task sampler would be told a branch's reward as if its task had been drawn again."""
    agents, market = exp.agents, exp.market
    N = agents.branches
    if not N:
        return None
    scenario = exp.module
    if not scenario.spec.branches:
        return (f"agents.branches = {N}: scenario {exp.run.scenario!r}'s world cannot restart an instance from an "
                f"inner state (its SPEC does not declare branches)")
    if agents.actions != "grpo":
        return f"agents.branches = {N}: branches are rollouts a learner of actions trains on; set agents.actions = \"grpo\""
    if scenario.spec.learned_actions == "lm" and agents.objective in ("process_branching", "focus"):
        return (f"agents.objective = {agents.objective!r}: its branch points read the action-logit learner's entropies "
                f"or critic at each state, which the LoRA learner does not score (agents.branches = {N})")
    from agents.learners.lm_grpo import CompletionLearner
    from agents.objectives import needs

    if set(needs(agents.objective)) & set(CompletionLearner.PAIRED):
        return (f"agents.objective = {agents.objective!r}: its privileged pass pairs a rollout with its group's "
                f"consecutive siblings, which a branched round does not hold (agents.branches = {N})")
    if agents.credit != "grpo":
        return (f"agents.branches = {N}: the tree credits each step by the rollouts below it, in agents.credit's "
                f"place (now {agents.credit!r}); set agents.credit = \"grpo\"")
    if agents.tasks != "world":
        return (f"agents.branches = {N}: a branch replays another rollout's task, which a task sampler would count "
                f"as drawn again; set agents.tasks = \"world\" (now {agents.tasks!r})")
    if market.batch % (1 + N):
        return (f"agents.branches = {N}: market.batch ({market.batch}) must be a multiple of 1 + {N} (M full "
                f"rollouts and {N} branches of each), e.g. market.batch = {4 * (1 + N)}")
    full = market.batch // (1 + N)
    if agents.group and full % agents.group:
        return (f"agents.group = {agents.group}: the {full} full rollouts of a round (market.batch / (1 + "
                f"agents.branches)) must hold whole groups")


def _credit_shapes_learned_actions(exp: Experiment) -> str | None:
    """A credit estimator gives the action logits' advantages; without learned actions it would do nothing."""
    agents = exp.agents
    if agents.credit != "grpo" and agents.actions != "grpo":
        return (f"agents.credit = {agents.credit!r}: credit shapes the action advantages; "
                f"set agents.actions = \"grpo\"")


def _world_feeds_the_estimator(exp: Experiment) -> str | None:
    """The world must provide the estimator's signals (agents/credit): refused here, not mid-run."""
    agents = exp.agents
    if agents.credit != "grpo":
        from agents.credit import MissingSignals, require
        from agents.credit.step_advantages import provides

        signals = provides(exp.module.spec.credit_signals)
        try:
            require(agents.credit, signals, f"scenario {exp.run.scenario!r}")
        except MissingSignals as err:
            return f"agents.credit = {agents.credit!r}: {err}"


def _world_offers_the_tasks(exp: Experiment) -> str | None:
    """A task sampler draws from the world's tasks and reads what its scenario's ``SPEC.task_signals`` name (agents/tasks
    ``NEEDS``); scrl normalises a learned action's reward among its sub-problem's rollouts, so it needs groups."""
    agents = exp.agents
    if agents.tasks == "world":
        return None
    from agents.credit import MissingSignals
    from agents.credit.base import check
    from agents.tasks import NEEDS

    try:
        check(agents.tasks, NEEDS[agents.tasks], exp.module.spec.task_signals, f"scenario {exp.run.scenario!r}",
              "task sampler")
    except MissingSignals as err:
        return f"agents.tasks = {agents.tasks!r}: {err}"
    if agents.tasks == "scrl" and agents.actions == "grpo" and agents.group < 2:
        return (f"agents.tasks = 'scrl': learned actions' rewards are normalised among the rollouts of each "
                f"sub-problem; set agents.group >= 2 (G rollouts of each task drawn; now {agents.group})")


def _plugin_settings_are_read(exp: Experiment) -> str | None:
    """A run reads the settings of the credit estimator, objective and task sampler it chose (agents/config.py
    PLUGIN_TABLES), and no others: a changed sub-table it does not read would do nothing."""
    agents = exp.agents
    for table, (key, none) in PLUGIN_TABLES.items():
        chosen, tables = getattr(agents, key), getattr(agents, table)
        for name in tables.changed():
            if name != chosen or name == none:
                return (f"agents.{table}.{name} = {tables[name]}: not read: the run reads only the settings of "
                        f"agents.{key} (now {chosen!r}), and none for {none}")


def _groups_hold_two_rollouts(exp: Experiment) -> str | None:
    """A group-relative advantage compares a rollout with its group's others: one alone has none."""
    agents, market = exp.agents, exp.market
    if _needs_groups(exp) and agents.group_size(market.batch) < 2:
        return (f"agents.group = {agents.group}: a group-relative advantage needs at least 2 "
                f"rollouts per group (raise market.batch, or set agents.reinforce.advantage = \"local\")")


def _funding_fits_int64(exp: Experiment) -> str | None:
    """The house's sure outlay (a unit of reward an episode, every newborn funded) stays below int64 / 1000
    micro-credits; the margin covers richer rewards, the first population and bids. Past it the ledger refuses
    the overflowing transfer (LedgerError) rather than let a balance wrap."""
    market, population, episodes = exp.market, exp.population, exp.run.episodes
    rounds = -(-episodes // market.batch)
    newborns = rounds * population.max_agents * population.births
    outlay = (episodes * market.reward_scale + newborns * population.initial_wealth) * MICRO
    if outlay > MAX_MICRO / 1000:
        key = "population.initial_wealth" if newborns * population.initial_wealth >= episodes * market.reward_scale \
            else "market.reward_scale"
        value = population.initial_wealth if key.startswith("population") else market.reward_scale
        return (f"{key} = {value!r}: the house would issue up to {outlay / MICRO:.3g} credits over "
                f"run.episodes = {episodes}, past {MAX_MICRO / 1000 / MICRO:.3g} (int64 micro-credits / 1000); "
                f"lower it or run.episodes")


MAX_AGENTS, MAX_CELLS = 10**15, 10**17  # agents in a population; market.batch x agents (a [B, N] array's cells)


def _counts_fit_memory(exp: Experiment) -> str | None:
    """Population sizes, and their product with market.batch (the [B, agents] bid arrays), small enough for numpy
    to state their size; below these bounds a size the machine cannot allocate is a one-line MemoryError."""
    population, batch = exp.population, exp.market.batch
    for key in ("initial_agents", "max_agents"):
        if getattr(population, key) > MAX_AGENTS:
            return f"population.{key} = {getattr(population, key)}: at most {MAX_AGENTS:,}"
    if batch * max(population.initial_agents, population.max_agents) > MAX_CELLS:
        return (f"market.batch = {batch}: times population.max_agents = {population.max_agents} is past "
                f"{MAX_CELLS:,} cells of bids a round")


def _scenario_has_a_heldout_set(exp: Experiment) -> str | None:
    """A learning curve measures the scenario's fixed held-out problems (its ``heldout_point``): none, nothing to do."""
    if exp.run.eval_every is not None and exp.module.heldout_point is None:
        return (f"run.eval_every = {exp.run.eval_every}: scenario {exp.run.scenario!r} has no held-out set to "
                "measure a learning curve on (the LLM worlds have one)")


def _scenario_rules_hold(exp: Experiment) -> str | None:
    """The scenario's own rules across its section and the others (its module's ``validate``, which raises a
    ValueError naming the key): the last rule, so the platform's keys are checked first."""
    try:
        exp.module.validate(exp)
    except ValueError as err:
        return str(err)


RULES = (_counts_fit_memory, _funding_fits_int64, _scenario_learns_what_is_asked, _learner_tables_are_read,
         _per_state_logits_have_a_state, _features_are_read, _token_price_is_charged, _objective_gets_its_signals,
         _scenario_has_a_skill_library, _device_is_there, _learned_bids_clear_by_softmax, _branches_can_be_played,
         _groups_divide_the_batch, _skill_groups_fit, _probe_size_is_read, _credit_shapes_learned_actions,
         _world_feeds_the_estimator, _world_offers_the_tasks, _plugin_settings_are_read, _groups_hold_two_rollouts,
         _scenario_has_a_heldout_set, _scenario_rules_hold)
"""In order: the first problem is the one reported."""


def problem(exp: Experiment) -> str | None:
    """The first rule ``exp`` breaks, as the one line the user sees (without the file), or None."""
    for rule in RULES:
        if found := rule(exp):
            return found
    return None
