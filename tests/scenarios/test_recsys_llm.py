"""The rerank role played by an LLM (SmolLM2 through agents/backends): prompts, robust parsing, cache, checks."""

from types import SimpleNamespace

import numpy as np
import pytest

from scenarios.recsys import rules, seeds
from scenarios.recsys.data import VALIDATION
from scenarios.recsys.llm_rerank import LLMRerank, parse
from scenarios.recsys.pipeline import INVALID, Compiled, Pipeline
from tests.scenarios.recsys_small import small_world


def test_answers_are_parsed_forgivingly():
    assert parse("3, 1, 2", 15) == [2, 0, 1]
    assert parse("Best: 1, 1, 99, 0, 4.\n5", 5) == [0, 3, 4]  # repeats, out of range and zero are skipped
    assert parse("I would recommend the drama.", 15) == [] and parse("", 3) == []


@pytest.mark.slow
def test_an_llm_reranks_from_the_skill_bodies():
    backends = pytest.importorskip("agents.backends")
    try:
        from scenarios.recsys.llm_rerank import backend
        model = backend(backends.BackendConfig(backend="hf", threads=1))
    except (FileNotFoundError, ImportError) as err:  # the embedded model's package is not installed here
        pytest.skip(f"no local model: {err}")
    w = small_world()
    llm = LLMRerank(model, k=10, depth=4, max_tokens=8)
    pipe = Pipeline(w.data, w.signals, w.pipeline.cfg, reranker=llm)
    skills = [SimpleNamespace(name=n, role=r, rule=rule, body=rules.body(rules.parse(rule, r), r))
              for n, r, _, rule in seeds.INITIAL]
    users = w.data.users(VALIDATION)[:1]
    out = pipe.run(Compiled.of(skills), users)
    assert len(llm.last_texts) == 1
    for b, text in enumerate(llm.last_texts):
        order = parse(text, 4)
        assert (out.status[b, 2] == INVALID) == (not order)  # no usable number: invalid_output, never a crash
        rule_order = w.pipeline.run(Compiled.of([s for s in skills if s.role != "rerank"]), users[b:b + 1]).ranked[0]
        assert sorted(out.ranked[b][out.ranked[b] >= 0]) == sorted(rule_order[rule_order >= 0])  # a reordering
        np.testing.assert_array_equal(out.ranked[b, :len(order)], rule_order[order])  # the model's picks first
    calls = model.stats.calls
    again = pipe.run(Compiled.of(skills), users)
    assert model.stats.calls == calls and np.array_equal(again.final, out.final)  # greedy answers are cached
    prompt = llm.prompts(pipe.requests(users[:1]), out.ranked[:1], ["Prefer fresh items."])[0]
    assert "Prefer fresh items." in prompt.messages()[0]["content"] and "4. " in prompt.user
