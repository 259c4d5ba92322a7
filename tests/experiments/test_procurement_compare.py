"""experiments/procurement_compare.py: valid arms, and a table paired by seed against the complete agent."""

import numpy as np
import pytest

from experiments import procurement_compare as pc
from scenarios.run.config import load


@pytest.mark.parametrize("arm", list(pc.ARMS))
def test_every_arm_is_a_valid_procurement_config_that_sets_its_bids(arm):
    exp = load("procurement", [*pc.ARMS[arm], *pc.SIZE], seed=2)
    assert exp.run.scenario == "procurement" and exp.market.bid_scheme == arm and exp.run.seed == 2


def run(arm, seed, reward, complete=0.2, curated=0.5):
    return {"arm": arm, "seed": seed, "heldout_reward": reward, "heldout_success": 1.0, "complete_agent_reward": complete,
            "curated_agent_reward": curated}


def test_rows_pair_each_arm_with_the_complete_agent_of_its_seed():
    rows = pc.rows_of([run("holland", 0, 0.5), run("holland", 1, 0.1, complete=0.3), run("fixed", 0, 0.4)])
    assert [r["agent"].split(" (")[0] for r in rows] == ["complete agent", "curated complete agent",
                                                         "splitter tool alone", "market, fixed bids",
                                                         "market, holland bids"]
    assert rows[0]["per_seed"] == "0.200 0.300" and rows[1]["reward"] == "0.500 ± 0.000"
    assert rows[4]["reward"] == f"0.300 ± {np.std([0.5, 0.1], ddof=1):.3f}"
    assert rows[4]["minus_complete"] == "+0.300 -0.200"
    assert rows[3]["seeds"] == 1 and rows[3]["minus_complete"] == "+0.200"
    assert 0 < float(rows[2]["reward"]) < 1  # the tool alone: exact, no model
    table = pc.markdown(rows).splitlines()
    assert table[0] == "| agent | reward | per_seed | minus_complete | success |" and len(table) == 7
