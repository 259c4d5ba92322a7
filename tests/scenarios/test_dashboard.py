"""The live dashboard: Mesa's SolaraViz served by solara, loaded in headless Chromium, stepped once."""

import sys
from pathlib import Path

import pytest

from tests.browser import Browser, find_chromium
from tests.processes import free_port, serving

ROOT = Path(__file__).resolve().parents[2]


def test_live_market_records_the_auction_the_market_cleared():
    from scenarios.report.dashboard import LiveMarket

    model = LiveMarket(scenario="relay", seed=3)
    for _ in range(5):
        model.step()
    a = model.auction
    assert a is not None and a["winner"] in a["ids"].tolist()
    pop = model.population
    assert set(a["ids"].tolist()) <= set(model.root)  # every bidder is an agent the view knows
    # first price, wealth-capped holland bids: the winner bid the most (ties broken by the RNG)
    assert a["bids"][a["ids"] == a["winner"]][0] == a["bids"].max()
    assert model.datacollector.model_vars["population"][-1] == pop.size
    assert set(model.root) >= set(pop.ids[pop.traders].tolist())


@pytest.mark.slow
def test_dashboard_renders_in_chromium_and_steps(tmp_path):
    binary = find_chromium()
    if binary is None:
        pytest.skip("no chromium binary: .ci/run installs Debian's chromium (apt-get install -y chromium)")
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    cmd = [sys.executable, "-m", "scenarios.cli.main", "dashboard", "relay", "--port", str(port)]  # its websocket
    with serving(cmd, url, tmp_path / "solara.log", timeout=90, cwd=ROOT):  # passes the same-origin check
        browser = Browser(binary)
        try:
            browser.open(url)
            text = browser.wait_for("Catallax market: relay", "Wealth of", "after 0 episodes", "Last auction",
                                    "Success rate", "Step: 0")
            assert "No auction yet" in text
            assert browser.wait_until("document.querySelectorAll('img').length >= 3")  # wealth, population, success
            assert browser.click("Step")
            text = browser.wait_for("Last auction: winner #", "after 1 episodes", "Step: 1")
            assert "Success rate: " in text and "over the last 1 rounds" in text
            assert browser.wait_until("document.querySelectorAll('img').length >= 4")  # and now the auction
            browser.screenshot(tmp_path / "dashboard.png")
            assert (tmp_path / "dashboard.png").stat().st_size > 10_000
        finally:
            browser.close()
