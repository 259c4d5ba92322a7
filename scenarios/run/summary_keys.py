"""What each key of a run's summary means, and its unit: the one place they are written down.

A run's summary (what ``catallax run --json`` prints last, ``run_experiment`` returns and the database stores)
is assembled in scenarios/run/runner.py ``_finish`` from three parts: the runner's own keys, the scenario's
``metrics`` and the learned policy's ``report`` (its learners and, for LLM worlds, skill evolution). Each group
below says which scenarios produce its keys; a key whose name varies (``ndcg10_initial`` for ``recsys.k = 10``) is
written as a pattern with ``*``. The documentation site renders this as its summary reference
(docs/summary_reference.py), and tests/test_summary_keys.py runs every built-in scenario at toy size and fails on
a key that no group of that scenario documents.

Units: a *rate* or *share* is a fraction in [0, 1]; *micro-credits* are the ledger's integers (1 credit =
1,000,000); *credits* are floats of the same money; token counts are the model's tokenizer's.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass

TEXT_WORLDS = ("desk", "errands", "longlookup", "multihop", "plangrid", "procurement", "review", "wordmath")
"""The built-in LLM worlds (scenarios/text/world.py); a text world of your own produces the same keys."""


@dataclass(frozen=True)
class Group:
    title: str
    scenarios: tuple[str, ...]
    """The scenarios that produce these keys (``("*",)``: every one)."""
    when: str
    """When the keys appear."""
    keys: dict[str, str]
    """Key (or pattern with ``*``) -> what it means, with its unit."""


GROUPS = (
    Group("Every run", ("*",), "always (scenarios/run/runner.py)", {
        "run_id": "The run's id in the results database (12 hex digits): `catallax report RUN_ID`, `open_run(url, run_id)`.",
        "scenario": "The scenario's name (`run.scenario`).",
        "seed": "The run's seed (`run.seed`).",
        "episodes": "Episodes played (`run.episodes` rounded up to whole rounds of `market.batch`); boltzmann: steps.",
        "ledger_hash": "SHA-256 over every transfer in order (hex): the same seed and config give the same hash.",
        "conservation_ok": "True when all balances sum to zero and the stored transfer log, replayed from zero, gives every "
                           "stored balance.",
        "transfers": "Rows in the ledger (money movements), count.",
        "house": "The house's balance, micro-credits (it funds births and pays rewards, so it is usually negative).",
        "population_extinct_at_episode": "Episodes done at the end of the first round that left no live agent; null "
                                         "when the population never died out (a warning on stderr says so too).",
    }),
    Group("relay", ("relay",), "always", {
        "success_rate": "Share of the last 20% of episodes whose chain completed (rate).",
        "stage_solvent": "Per stage, in order: whether a specialist of that stage is alive with a positive balance (list "
                         "of booleans).",
        "population": "Live agents at the end, count.",
    }),
    Group("blocks", ("blocks",), "always", {
        "heldout_success": "The final population, frozen, on the held-out instances: success rate per instance size "
                           "(size -> rate; `blocks.heldout_sizes`).",
        "train_success": "Success rate over the last 10% of training episodes (rate).",
        "unlocked_size": "The largest training size the curriculum had unlocked at the end (blocks).",
        "population": "Live agents at the end, count.",
        "richest_rules": "The rules of the 8 richest live agents, richest first (rule texts).",
    }),
    Group("boltzmann", ("boltzmann",), "always", {
        "agents": "Agents on the grid, count.",
        "grid": "The grid's width and height, cells (0 x 0: no grid, a well-mixed population).",
        "gini": "Gini coefficient of the agents' whole units at the end (0: equal, 1: one agent holds all).",
        "gini_tail_mean": "Mean Gini over the last 20% of steps.",
        "zero_wealth_share": "Share of agents holding no unit at the end (share).",
        "max_units": "The richest agent's units at the end, count.",
        "mean_units": "Mean units per agent (the money supply over the agents; constant).",
    }),
    Group("recsys", ("recsys",), "always, unless a row says otherwise", {
        "ndcg*_initial": "NDCG@k (k = `recsys.k`: `ndcg10_initial` by default) of the initial skill library on the test "
                         "users (0-1).",
        "ndcg*_final": "NDCG@k of the final library (the main arm's) on the test users (0-1).",
        "recall50_initial": "Recall@50 of the initial library on the test users (0-1).",
        "recall50_final": "Recall@50 of the final library on the test users (0-1).",
        "coverage_initial": "Share of the catalogue the initial library recommends to the test users (share).",
        "coverage_final": "Share of the catalogue the final library recommends to the test users (share).",
        "validation_ndcg_initial": "NDCG@k of the initial library on the validation users (0-1).",
        "validation_ndcg_final": "NDCG@k of the final library on the validation users (0-1).",
        "edits_accepted": "Skill edits the gate accepted (main arm), count.",
        "edits_rejected": "Skill edits the gate rejected (main arm), count.",
        "mode": "`recsys.mode`: team or market.",
        "credit": "The main arm's skill credit (`skills.credit`).",
        "skills_final": "The final library's current skills, as name@version labels.",
        "edit_loop": "The main arm's edit-loop counts: diagnoses by the diagnoser and by the fallback, edits proposed, "
                     "accepted and rejected, roles emptied, and the accepted edits' summed validation gain against "
                     "their held-out gain (NDCG), with how many lowered it by more than one standard error.",
        "baselines": "Each baseline's test NDCG@k (name -> 0-1).",
        "baselines_recall50": "Each baseline's test Recall@50 (name -> 0-1).",
        "baseline_best": "The tuned baseline with the best validation NDCG@k (its name).",
        "baselines_tuned": "Each tuned baseline's chosen hyper-parameters and its validation NDCG@k.",
        "baselines_coverage": "Each baseline's catalogue coverage (share); with several arms only.",
        "baseline_blend": "The tuned blend alone (its skills, NDCG@k, Recall@50, coverage); with several arms only.",
        "arms": "Per arm (`recsys.compare`): its final NDCG@k, Recall@50, coverage, validation NDCG@k, edits and "
                "edit-loop counts, and its NDCG@k's paired standard error against the best arm (team mode).",
        "harmful_planted": "Harmful skills planted in the initial library (`recsys.plant_harmful`), count.",
        "harmful_pruned_*": "Planted harmful skills the arm named after the underscore pruned by the end, count.",
        "learned_recall": "The trained recall source (an `agents.objective` such as ca_pg): its objective, updates, test "
                          "hit rate before and after, and the final library's NDCG@k and Recall@50 without its training.",
        "inactive": "Genre-based operators that did nothing because the data has no genres (names).",
        "population": "Live agents at the end (market mode), count.",
        "agents_per_role": "Live agents per pipeline role (market mode), count.",
        "fielded_team": "The skills each role's winning agents fielded at the end (market mode).",
        "house_wealth": "The house's balance at the end (market mode), micro-credits.",
    }),
    Group("LLM worlds", (*TEXT_WORLDS,), "always (scenarios/text/scenario.py); wordmath renames four of them (below)", {
        "heldout_success": "The trained market, frozen, on the held-out problems: success rate (rate).",
        "heldout_reward": "The same episodes' mean reward (the world's reward units).",
        "complete_agent_success": "The complete agent (one agent holding every tool, the whole initial skill pool and the "
                                  "LLM roles' summed token budget, on the untrained model) on the same problems (rate).",
        "complete_agent_reward": "The complete agent's mean reward.",
        "curated_agent_success": "The complete agent without the world's planted-wrong lines: the ceiling (rate); worlds "
                                 "with `wrong` lines only.",
        "curated_agent_reward": "The curated complete agent's mean reward; worlds with `wrong` lines only.",
        "single_agent_success": "The best live agent of the world's `single` roles playing every step alone (rate); worlds "
                                "with `single` roles only.",
        "single_agent_reward": "That agent's mean reward; worlds with `single` roles only.",
        "single_agent": "That agent's description (its role and skills); worlds with `single` roles only.",
        "heldout_problems": "Held-out problems measured (`heldout`), count.",
        "heldout_seed": "The held-out problems' seed stream (`heldout_seed`).",
        "train_success_rate": "Success rate over the last 20% of training episodes (rate).",
        "population": "Live agents at the end, count.",
        "roles": "Live agents per role at the end (role -> count).",
        "invalid_actions": "Completions the world refused (forfeits), count.",
        "actions": "Actions the agents took (completions and tool outputs), count.",
        "rewrites": "Skill rewrites at births, count.",
        "malformed_rewrites": "Rewrites that were not one usable skill line, count.",
        "backend": "The engine and model of the shared backend (`hf:smollm2`, ...).",
        "backend_seconds": "Seconds spent in model calls, all engines, summed.",
        "completion_tokens": "Tokens the models generated, count.",
        "llm_tokens": "Prompt and generated tokens of every model call, count.",
        "llm_usage": "Per model (by label): prompt tokens, completion tokens and seconds.",
        "role_tokens": "Tokens per LLM role (prompt and completion), count.",
        "roles_never_woke": "Role -> training rounds in which it had live agents and none of them woke (an empty dict "
                            "when every role woke; a warning on stderr names the first).",
    }),
    Group("Learning curves", (*TEXT_WORLDS,), "runs with `run.eval_every` set (agents/heldout.py)", {
        "heldout_curve": "The frozen market's held-out success measured before the first round, every `run.eval_every` "
                         "rounds and after the last: `[round, episodes, success]` per point (success a rate).",
        "heldout_eval_seconds": "Seconds spent measuring the curve's points, summed (a point whose policy and library "
                                "are unchanged is reused, not replayed).",
    }),
    Group("wordmath", ("wordmath",), "always: the LLM worlds' keys with these names (rewards, equal to successes here, "
          "left out)", {
        "heldout_accuracy": "`heldout_success`: the trained market's exact-answer accuracy on held-out problems (rate).",
        "single_agent_accuracy": "`single_agent_success`: the best single agent's accuracy (rate).",
        "complete_agent_accuracy": "`curated_agent_success`: the complete agent without the planted-wrong lines (rate).",
        "complete_agent_whole_pool_accuracy": "`complete_agent_success`: the complete agent holding the whole pool (rate).",
    }),
    Group("Skill evolution", (*TEXT_WORLDS,), "LLM worlds with skill evolution (`skills.credit` other than none; "
          "agents/llm/edit_pass.py)", {
        "skill_edits_proposed": "Skill edits written and put to the gate, count.",
        "skill_edits_accepted": "Edits the gate accepted, count.",
        "skill_edits_rejected": "Edits the gate rejected, count.",
        "edit_passes": "Edit passes run, count.",
        "skill_rewrites_malformed": "Edits whose rewrite was not a usable skill line, count.",
        "probe_episodes": "Episodes of the frozen probes the credit read (`skills.evidence = probe`), count.",
        "edits_refused_*": "Edits refused before the gate by the library's limits, by reason (after the underscore), count.",
        "blame_moved_by_imitation": "Blamed lines whose blame moved to the line their failed outputs imitate "
                                    "(`skills.imitation`, skills/imitation.py), count.",
        "blame_unread_by_imitation": "Blamed lines without a failed step the reader could score: their blame stays "
                                     "(`skills.imitation`), count.",
        "validation_gain_accepted": "The accepted edits' summed gain on the validation problems (accuracy).",
        "heldout_gain_accepted": "The same edits' summed gain on the held-out problems (accuracy).",
        "heldout_worse_accepted": "Accepted edits that lowered held-out accuracy by more than one standard error, count.",
        "births_*": "Births' rewrites by check outcome (passed, failed, unchecked), count.",
        "diagnoses_llm": "Diagnoses the LLM diagnoser gave, count.",
        "diagnoses_fallback": "Diagnoses the rule fallback gave where the LLM's could not be used, count.",
        "diagnoses_malformed": "LLM diagnoses that did not parse, count.",
        "diagnoses_rule": "Diagnoses of the rule diagnoser, count.",
        "skill_pass_seconds": "Seconds spent in edit passes, summed.",
        "heldout_accuracy_initial": "The frozen market's held-out accuracy before the first edit pass (rate).",
    }),
    Group("Learners", ("*",), "runs whose agents learn their actions (`agents.actions = \"grpo\"`: learned logits or "
          "an LM)", {
        "policy_updates": "Rounds whose update changed the policy's actions, count.",
        "lm_completions_trained": "Completions the LM learner trained on, count.",
        "lm_train_tokens": "Tokens in those completions, count.",
        "lm_privileged_tokens": "Tokens the privileged passes scored (teacher, hindsight, hint prompts), count.",
        "lm_branches": "Branch rollouts played (`agents.branches`), count.",
        "lm_branches_after_edit": "Branches that started after a context edit, count.",
        "lm_breakpoints": "Steps the state graph marked as breakpoints (diamond_sd), count.",
        "lm_recovery_steps": "Steps given a recovery reply to learn from (diamond_sd), count.",
    }),
)


def groups_of(scenario: str) -> list[Group]:
    """The groups whose keys ``scenario`` may produce (a text world of one's own: the LLM worlds')."""
    return [g for g in GROUPS if "*" in g.scenarios or scenario in g.scenarios]


def describe(key: str, scenario: str) -> str | None:
    """What ``key`` means in ``scenario``'s summary, or None where no group of that scenario documents it."""
    for group in groups_of(scenario):
        for name, doc in group.keys.items():
            if fnmatch.fnmatchcase(key, name):
                return doc
    return None


def undocumented(summary: dict, scenario: str) -> list[str]:
    """The keys of ``summary`` (a run of ``scenario``) that no group documents."""
    return sorted(k for k in summary if describe(k, scenario) is None)
