"""A card per shipped scenario: what it models, its roles, the metrics it reports, its default size and run time,
and its results page. docs/scenarios.md shows them (its ``<!-- generated: scenario cards -->`` marker is
replaced at build time, docs/render_hooks.py); the default size is read from the scenario's TOML and the run
time from the stored rows of ``python -m docs.scenario_times`` (benchmarks/results/scenario_runtime.jsonl), so
neither is typed by hand. tests/test_papers.py fails when a shipped scenario has no card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "benchmarks" / "results" / "scenario_runtime.jsonl"
TEXT_WORLD = ("heldout_reward", "heldout_success", "train_success_rate", "single_agent_reward",
              "complete_agent_reward")


@dataclass(frozen=True)
class Card:
    models: str
    roles: str
    metrics: tuple[str, ...]
    results: str  # the page that studies it, relative to docs/
    size: str = ""  # what the episodes and agents of its TOML count, where that is not an episode and a trader


CARDS = {
    "relay": Card("a work item passed along a chain of stages, paid only at the end: whether credit flows back to "
                  "the early stages (the bucket brigade against paying the last owner only)",
                  "rule agents, one per (stage, action) rule; the auction's winner acts", ("success_rate",
                  "stage_solvent", "conservation_ok"), "results/relay.md"),
    "blocks": Card("Baum's Hayek Blocks World: copy a goal stack using two spare stacks, paid only on completion",
                   "rule agents (condition -> move), born, taxed and bankrupted by the economy",
                   ("train_success", "heldout_success"), "results/blocks.md"),
    "boltzmann": Card("Mesa's Boltzmann wealth model on the integer ledger: random exchange concentrates wealth",
                      "N agents on a grid, each giving one unit to a random cellmate; no auction",
                      ("gini", "zero_wealth_share"), "performance.md",
                      "run.episodes counts steps of the whole grid"),
    "recsys": Card("the skill library of a recommendation pipeline (recall -> rank -> rerank) evolved by "
                   "group-relative credit and a validation gate", "recall, rank and rerank roles (one agent each, "
                   "or several bidding in market mode)", ("validation_ndcg_initial", "validation_ndcg_final",
                   "test_hit_rate_initial", "test_hit_rate_final"), "results/recsys.md",
                   "run.episodes counts rollouts, one round = one batch; one agent per role unless recsys.mode is market"),
    "recsys_large": Card("recsys at scale: 100k users x 20k items", "recall, rank and rerank roles",
                         ("validation_ndcg_initial", "validation_ndcg_final"), "results/recsys.md",
                         "run.episodes counts rollouts, one round = one batch; one agent per role unless recsys.mode is market"),
    "wordmath": Card("two-step arithmetic word problems solved by weak LLM agents (SmolLM2-135M) in a market, "
                     "against the best of them alone", "extractor, calculator (a tool), answerer and generalist roles (LLM agents)",
                     ("heldout_accuracy", "single_agent_accuracy", "complete_agent_accuracy"), "results/wordmath.md"),
    "flagship": Card("the whole design in one run on wordmath: LLM agents, learned bids, GRPO updates, births and "
                     "skill evolution", "wordmath's roles", ("heldout_accuracy", "complete_agent_accuracy"),
                     "results/skill_evolution.md"),
    "procurement": Card("buyers haggle for a client against a scripted seller with a private floor price",
                        "negotiator and closer (LLM agents) writing offers", TEXT_WORLD, "results/objectives.md"),
    "multihop": Card("two-hop lookup over 1,000 synthetic facts through a frozen retriever",
                     "searcher and answerer (LLM agents)", TEXT_WORLD, "results/objectives.md"),
    "plangrid": Card("plan, then render: a request becomes a 4-field plan, the plan a text grid",
                     "planner and renderer (LLM agents)", TEXT_WORLD, "results/objectives.md"),
    "longlookup": Card("a 4-hop chain longer than the context holds: the agents choose which turns to keep",
                       "searcher, compactor and answerer (LLM agents)", TEXT_WORLD, "results/objectives.md"),
    "errands": Card("fetch three goods from ten stalls in any order with a purse that buys exactly three",
                    "shopper (one LLM role)", TEXT_WORLD, "results/objectives.md"),
    "review": Card("quote a product record's evidence, then score it against a policy's three rules",
                   "reader and scorer (LLM agents)", TEXT_WORLD, "results/objectives.md"),
    "desk": Card("arithmetic questions of three kinds answered by specialist LLM agents (SmolLM2-135M), some born "
                 "holding planted wrong examples: a world sized to watch a small model's market learn, curve by curve",
                 "adder, subtractor and multiplier (LLM agents)",
                 ("heldout_success", "complete_agent_success", "curated_agent_success", "train_success_rate"),
                 "results/desk.md"),
}


def times() -> dict[str, dict]:
    if not TIMES.is_file():
        return {}
    return {row["scenario"]: row for row in map(json.loads, TIMES.read_text().splitlines()) if "scenario" in row}


def default_size(name: str, note: str = "") -> str:
    from scenarios.registry import SCENARIO_DIR
    from scenarios.run.config import load

    d = load(str(SCENARIO_DIR / f"{name}.toml")).to_dict()
    agents = d.get(d["run"]["scenario"], {}).get("agents") or d["population"]["initial_agents"]
    size = f"{d['run']['episodes']} episodes in batches of {d['market']['batch']}"
    return f"{size} ({note})" if note else f"{size}, {agents} agents at the start"


def run_time(row: dict | None) -> str:
    if row is None:
        return "not measured"
    where = f"{row['date']}, {row['machine']}" + (f", load average {row['load']}" if "load" in row else
                                                  ", shared with other work")
    if row["seconds"] is None:
        return f"over the measurement's limit ({row['note']}; {where})"
    return f"{row['seconds']:.0f} s ({where})"


def markdown() -> str:
    measured = times()
    parts = []
    for name, card in CARDS.items():
        page = f"[{card.results}]({card.results})"
        parts.append(
            f"## `{name}`\n\n{card.models[0].upper()}{card.models[1:]}.\n\n"
            f"| | |\n|---|---|\n| Roles | {card.roles} |\n"
            f"| Metrics | {', '.join(f'`{m}`' for m in card.metrics)} |\n"
            f"| Default size | {default_size(name, card.size)} (`catallax config show {name}`) |\n"
            f"| Run time at the default size | {run_time(measured.get(name))} |\n"
            f"| Results | {page} |\n")
    return "\n".join(parts)
