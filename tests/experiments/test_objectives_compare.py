"""The objectives comparison at toy size (1 seed, 160 episodes, grpo, eapo, the rods and scrl samplers, focus on trees):
one row per objective and per task sampler, numbers only where a run happened, and a refusal that names
what the world lacks (the README reports the full run)."""

import json

from agents.learners.action_logits import ActionLogits
from agents.objectives import NAMES, needs
from experiments import objectives_compare

BATCH_C = ("agentopsd", "alignopsd", "trial", "cepo", "h2sd", "stop_segment", "rredcot", "distil", "hint_sd", "diamond_sd",
           "contextpilot", "evidence_diagnosis")


def test_quick_json_has_a_row_per_objective_and_refusals_name_their_signals(capsys):
    returned = objectives_compare.main(["--quick", "--json"])
    rows = json.loads(capsys.readouterr().out.strip().splitlines()[-1])["rows"]
    assert rows == json.loads(json.dumps(returned))  # what it prints is what it returns
    assert [r["objective"] for r in rows] == [*NAMES, "tasks=uniform", "tasks=rods", "tasks=scrl", *objectives_compare.BRANCHED]
    by = {r["objective"]: r for r in rows}
    for name, batch in (("grpo", 8), ("eapo", 8), ("tasks=rods", 8), ("tasks=scrl", 8), ("focus+branches", 12)):
        r = by[name]
        assert r["status"] == "ran" and r["why"] is None
        assert 0 <= r["heldout"] <= 1 and r["sd"] == 0.0 and r["per_seed"] == [round(r["heldout"], 4)]
        assert r["rounds"] == -(-160 // batch) and 0 < r["updates"] <= r["rounds"] and r["steps_per_s"] > 0
    refused = [r for r in rows if r["status"] == "refused"]
    # batch C: no privileged pass on rule logits; process_branching without branches
    assert {r["objective"] for r in refused} == {"empo", "ca_pg", "process_branching", *BATCH_C, "contextpilot+branches"}
    for r in refused:
        missing = set(needs(r["objective"].removesuffix("+branches"))) - set(ActionLogits.PROVIDES) - set(ActionLogits.PROVIDES_WHERE["oracle"])
        missing -= {"branch"} if r["objective"].endswith("+branches") else set()
        assert missing and all(signal in r["why"] for signal in missing), r["why"]
        assert r["heldout"] is None and r["sd"] is None and r["updates"] is None and r["steps_per_s"] is None
    # runnable on blocks but not asked for in --quick: a row without a number
    assert {r["objective"] for r in rows if r["status"] == "skipped"} == {"tppo", "pact", "tree_opsd", "focus", "sero",
                                                                          "tasks=uniform", "grpo+branches",
                                                                          "tree_opsd+branches",
                                                                          "process_branching+branches"}


def test_readme_table_has_one_line_per_objective(tmp_path, capsys):
    out = tmp_path / "table.md"
    objectives_compare.main(["--quick", "--readme", "--objectives", "grpo", "--out", str(out),
                             "--rows", str(tmp_path / "rows.jsonl")])
    table = out.read_text().strip()
    assert table == capsys.readouterr().out.strip()
    lines = [line for line in table.splitlines() if line.startswith("| ") and "objective" not in line]
    assert [line.split("|")[1].strip() for line in lines] == list(objectives_compare.ROWS)
    assert "| ca_pg | refused: needs item_logits, list_len, target |" in table
    stored = [json.loads(line) for line in (tmp_path / "rows.jsonl").read_text().splitlines()]  # the docs' rows
    assert [r["objective"] for r in stored] == list(objectives_compare.ROWS) and all(r["commit"] for r in stored)


def test_workers_give_the_serial_numbers(capsys):
    """--workers 2 runs each seed in a spawned process: the held-out numbers are the serial run's, seed by seed."""
    args = ["--quick", "--objectives", "grpo", "--seeds", "2", "--json"]
    serial = {r["objective"]: r for r in objectives_compare.main(args)}
    parallel = {r["objective"]: r for r in objectives_compare.main([*args, "--workers", "2"])}
    assert len(serial["grpo"]["per_seed"]) == 2
    for key in ("per_seed", "per_size", "updates", "rounds"):
        assert parallel["grpo"][key] == serial["grpo"][key]


def test_an_lm_economys_listed_table_has_the_asked_rows_and_the_privileged_cost():
    setup = objectives_compare.Setup(**objectives_compare.PROCUREMENT, objectives=("grpo", "trial"), economy="procurement",
                                     listed=True)
    ran = {"status": "ran", "heldout": 0.5, "sd": 0.0, "per_seed": [0.5], "per_size": {}, "updates": 2, "rounds": 4,
           "tokens_per_s": 40.0}
    rows = [{"objective": "grpo", **ran, "privileged_per_round": 0.0},
            {"objective": "trial", **ran, "privileged_per_round": 812.4}]
    text = objectives_compare.table(rows, setup)
    assert "procurement" in text and "reward (share of the possible surplus won)" in text
    assert text.splitlines()[-1] == "| trial | 0.500 ± 0.000 | 0.50 | 2 / 4 | 40 | 812 |"
    assert objectives_compare.overrides("trial", setup)[-1] == "procurement.heldout=32"


def test_batch_c_on_the_multihop_world_runs_what_its_signals_allow_and_names_what_the_rest_lack():
    """Every batch C row on multihop (it knows the correct output and the search hits): the objectives and the two
    retrieval estimators load; the others are refused, each naming the signal multihop lacks. Config loads only."""
    setup = objectives_compare.Setup(**objectives_compare.TEXT, objectives=objectives_compare.BATCH_C,
                                     economy="multihop", listed=True)
    assert objectives_compare.overrides("credit=sid_span", setup)[1] == "agents.credit=sid_span"
    assert objectives_compare.overrides("skills=memory_shapley", setup)[1] == "skills.credit=memory_shapley"
    why = {name: objectives_compare.refusal(name, setup) for name in objectives_compare.BATCH_C}
    lacks = {"diamond_sd": "subgoals", "evidence_diagnosis": "rubric_sample_logp", "process_branching+branches": "branch", "contextpilot+branches": "context_edit", "credit=graph_grpo": "deps", "credit=workrover_vtca": "progress",
             "credit=pacpo": "paired", "credit=self_credit": "cited", "credit=dars": "plan"}
    assert {name for name, reason in why.items() if reason} == set(lacks)
    for name, signal in lacks.items():
        assert signal in objectives_compare.short_reason(why[name]), why[name]
