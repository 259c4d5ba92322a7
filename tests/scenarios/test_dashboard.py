"""The live dashboard: Mesa's SolaraViz served by solara, loaded in headless Chromium, stepped once."""

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tests.browser import Browser, find_chromium

ROOT = Path(__file__).resolve().parents[2]


def test_live_market_records_the_auction_the_market_cleared():
    from scenarios.dashboard import LiveMarket

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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(port: int) -> subprocess.Popen:
    solara = Path(sys.executable).with_name("solara")
    return subprocess.Popen([str(solara), "run", "scenarios/dashboard.py", "--host", "127.0.0.1", "--port", str(port),
                             "--production", "--no-open"], cwd=ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, env={**os.environ, "CATALLAX_DASHBOARD": "relay"})


def _wait_http(url: str, server: subprocess.Popen, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"solara exited: {server.stderr.read().decode()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"{url} did not answer")


@pytest.mark.slow
def test_dashboard_renders_in_chromium_and_steps(tmp_path):
    binary = find_chromium()
    if binary is None:
        pytest.skip("no chromium binary: .ci/run installs Debian's chromium (apt-get install -y chromium)")
    port = _free_port()
    server = _serve(port)
    browser = None
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_http(url, server)
        browser = Browser(binary)
        browser.open(url)
        text = browser.wait_for("Catallax market: relay", "Wealth of", "after 0 episodes", "Last auction",
                                "Success rate", "Step: 0")
        assert "No auction yet" in text
        assert browser.evaluate("document.querySelectorAll('img').length") >= 3  # wealth, population, success
        assert browser.click("Step")
        text = browser.wait_for("Last auction: winner #", "after 1 episodes", "Step: 1")
        assert "Success rate: " in text and "over the last 1 rounds" in text
        assert browser.evaluate("document.querySelectorAll('img').length") >= 4  # and now the auction
        browser.screenshot(tmp_path / "dashboard.png")
        assert (tmp_path / "dashboard.png").stat().st_size > 10_000
    finally:
        if browser is not None:
            browser.close()
        server.terminate()
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
