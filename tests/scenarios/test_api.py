"""The Python API named in scenarios/__init__.py: what the CLI does, from a notebook or a script."""

import json

import scenarios
from market import replay
from scenarios.cli.main import main


def test_load_build_step_persist_and_read_back(tmp_path):
    exp = scenarios.load("relay", {"market.batch": 4, "run.episodes": 40}, seed=3)
    assert exp.market.batch == 4 and exp.run.seed == 3
    model = scenarios.build_model(exp)
    for _ in range(5):
        model.step()
    frame = model.datacollector.get_model_vars_dataframe()  # Mesa's own DataCollector, a pandas frame
    assert len(frame) == 5 and {"population", "house", "gini", "success"} <= set(frame.columns)

    url = f"sqlite:///{tmp_path / 'api.db'}"
    summary = scenarios.run_experiment(exp, url, progress=False)
    run = scenarios.open_run(url, summary["run_id"])
    assert run.summary["ledger_hash"] == summary["ledger_hash"] and len(run.transfers) == summary["transfers"]
    balances = replay(run.transfers)
    assert sum(balances.values()) == 0
    assert dict(zip(run.ids.tolist(), run.final_balance().tolist())) == {a: balances.get(a, 0) for a in run.ids.tolist()}


def test_the_api_and_the_cli_give_the_same_run(tmp_path, capsys):
    via_api = scenarios.run_experiment(scenarios.load("relay", ["run.episodes=30"], seed=5), f"sqlite:///{tmp_path / 'a.db'}",
                                       progress=False)
    main(["run", "relay", "--set", "run.episodes=30", "--seed", "5", "--json", "--db", f"sqlite:///{tmp_path / 'b.db'}"])
    via_cli = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert via_api["ledger_hash"] == via_cli["ledger_hash"]


def test_scenarios_lists_every_name_the_loader_accepts(capsys):
    main(["scenarios", "--json"])
    listed = {row["name"]: row for row in json.loads(capsys.readouterr().out)}
    assert {"relay", "blocks", "boltzmann", "recsys", "wordmath", "recsys_large"} <= set(listed)
    assert listed["recsys_large"]["kind"] == "scenario file" and listed["relay"]["kind"] == "built-in"
    assert all(row["description"] for row in listed.values())
    for name in listed:  # every listed name loads (recsys_large is a scenario file of recsys)
        assert scenarios.load(name).run.episodes >= 1
    assert not any(scenarios.get_scenario(n).plugin for n in ("relay", "blocks"))
