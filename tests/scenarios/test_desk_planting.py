"""desk's planting keys (``desk.harmful``, ``desk.misleading``): how often a newcomer holds its role's planted lines.
At 1 every agent holds one, at 0 none does; the other lines' draws do not change (the same uniforms, in order), and
the complete agent holds only lines a newcomer may hold; with wake-up off every agent of a question's role bids for
it, unscored. A scripted model (named as such: desk's real runs are in
test_desk.py) answers every question right, so building and playing the world needs no LLM."""

import numpy as np

from agents.backends.base import Completion, Stats
from scenarios import desk as D
from scenarios.run.config import load
from scenarios.run.runner import build_model
from scenarios.text import scenario as text_scenario
from scenarios.text.adapter import TextBatch


class RightAnswerer:
    """Scripted: replies each question's right answer, and keeps every prompt it was sent."""

    name = "scripted"

    def __init__(self):
        self.stats, self.sent = Stats(), []

    def generate(self, prompts):
        self.sent += prompts
        out = []
        for p in prompts:
            a, sign, b = p.user.removeprefix("What is ").removesuffix("?").split()
            value = {"+": int(a) + int(b), "-": int(a) - int(b), "*": int(a) * int(b)}[sign]
            out.append(Completion(f"Answer: {value}", tokens=2))
        return out

    def close(self):
        pass


def holdings(monkeypatch, keys):
    monkeypatch.setattr(text_scenario, "shared_backend", lambda cfg: RightAnswerer())
    model = build_model(load("desk", ["agents.actions=rule", *keys], seed=5))  # the LoRA learner needs a real model
    policy = model.policy.unwrapped
    rows = np.flatnonzero(model.population.traders)
    return model, [(policy.roles[policy.role[r]].name, [policy.catalogue.lines[n] for n in policy.skills[r]])
                   for r in rows]


def test_at_one_every_agent_holds_its_planted_line_at_zero_none_and_the_rest_is_drawn_alike(monkeypatch):
    _, default = holdings(monkeypatch, [])
    _, planted = holdings(monkeypatch, ["desk.harmful=1", "desk.misleading=0"])
    assert [role for role, _ in default] == [role for role, _ in planted]
    for (role, lines), (_, shipped) in zip(planted, default):
        i = D.KINDS.index(role)
        assert D.HARMFUL[i] in lines and D.MISLEADING[i] not in lines
        assert [x for x in lines if x not in D.WRONG] == [x for x in shipped if x not in D.WRONG]
    assert any(D.HARMFUL[D.KINDS.index(role)] not in lines for role, lines in default)  # 0.4: not everyone


def test_the_complete_agent_holds_no_line_a_newcomer_cannot_hold(monkeypatch):
    model, _ = holdings(monkeypatch, ["desk.misleading=0"])
    backend = model.policy.unwrapped.backend
    batch = TextBatch(model.world.board, 7, 1, fixed=np.arange(6))
    success, _ = text_scenario.complete_agent(model, batch)
    shown = "\n".join(p.skills for p in backend.sent)
    assert success == 1.0 and all(line in shown for line in D.HARMFUL)
    assert not any(line in shown for line in D.MISLEADING)


def test_with_wake_up_off_every_agent_of_the_question_s_role_bids_and_nothing_is_scored(monkeypatch):
    model, _ = holdings(monkeypatch, [])
    policy = model.policy.unwrapped
    obs = model.world.observe()  # the scripted model has no score(): a scoring pass would fail here
    wake = policy.eligible(obs)
    live = np.flatnonzero(model.population.traders)
    kinds = [policy.task.summaries(obs[b:b + 1])[0] for b in range(len(obs))]
    for b, summary in enumerate(kinds):
        role = D.KINDS[D.STAGES.index(summary)]
        assert set(np.flatnonzero(wake[b])) == {r for r in live if policy.roles[policy.role[r]].name == role}
    assert policy.scores == {}
