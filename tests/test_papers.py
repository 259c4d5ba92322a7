"""The paper index and the scenario cards cover what the code offers: every method a registry or a config choice
names has a paper-index entry (docs/papers.py), every shipped scenario a card (docs/scenario_cards.py), and the
metrics they say are logged are names the code writes. Formulas render to MathML without a script."""

import dataclasses
import logging
import typing
from pathlib import Path

import agents.credit
import agents.objectives
import agents.tasks
from agents.config import AgentsConfig
from docs import papers, render_hooks, scenario_cards
from market.config import MarketConfig
from scenarios.registry import SCENARIO_DIR, SCENARIOS
from skills.config import SkillsConfig

ROOT = Path(__file__).resolve().parents[1]
MECHANISMS = {"skills_mechanism": {"gate", "flowright", "imitation"}, "economy": {"births", "rent_and_bankruptcy"}}


def choices(cls, name: str) -> set[str]:
    """The values a ``Literal`` config field allows."""
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    return set(typing.get_args(field.type if not isinstance(field.type, str) else typing.get_type_hints(cls)[name]))


def registered() -> dict[str, set[str]]:
    return {"credit": set(agents.credit.NAMES), "objective": set(agents.objectives.NAMES),
            "tasks": set(agents.tasks.NAMES), "skills": choices(SkillsConfig, "credit"),
            "bid_scheme": choices(MarketConfig, "bid_scheme"), "clearing": choices(MarketConfig, "clearing"),
            "payment": choices(MarketConfig, "payment"), "bid_objective": choices(AgentsConfig, "bid_objective"),
            **MECHANISMS}


def test_every_registered_method_has_exactly_one_entry_and_no_entry_is_stale():
    indexed = {key: [m.name for m in methods] for key, methods in papers.by_registry().items()}
    for key, names in registered().items():
        assert len(names) >= 2, key  # the enumeration itself found the registry
        missing = names - set(indexed[key])
        assert not missing, f"{papers.REGISTRIES[key]}: no paper-index entry for {sorted(missing)}"
        assert set(indexed[key]) == names, f"{key}: entries for methods the code does not offer"
        assert len(indexed[key]) == len(names), f"{key}: a method listed twice"
    assert len(registered()["credit"]) == 25 and len(registered()["objective"]) == 22


def test_every_entry_says_what_it_implements_and_cites_or_says_not_confirmed():
    page = papers.markdown()
    for m in papers.METHODS:
        assert m.implements and m.leaves_out, m.name
        assert all(p.title and p.authors and p.year for p in m.papers), m.name
    assert page.count("- **Paper**: ") == len(papers.METHODS)
    assert "[arXiv 2402.03300](https://arxiv.org/abs/2402.03300)" in page and papers.NOT_CONFIRMED in page


def test_an_objectives_logged_metrics_are_stats_its_code_writes():
    grpo = (ROOT / "agents/objectives/grpo.py").read_text()
    for m in papers.METHODS:
        if m.registry == "objective":
            source = (ROOT / f"agents/objectives/{m.name}.py").read_text()
            for metric in m.logs:
                assert f'"{metric}"' in source or f"{metric}=" in source or f'"{metric}"' in grpo, (m.name, metric)


def test_every_shipped_scenario_has_a_card_with_metrics_its_code_reports():
    shipped = set(SCENARIOS) | {p.stem for p in SCENARIO_DIR.glob("*.toml")}
    assert set(scenario_cards.CARDS) == shipped
    text_world = (ROOT / "scenarios/text/scenario.py").read_text()
    for name, card in scenario_cards.CARDS.items():
        module = SCENARIOS.get(name) or SCENARIOS[{"flagship": "wordmath", "recsys_large": "recsys"}[name]]
        path = ROOT / (module.replace(".", "/") + ".py")
        code = "".join(p.read_text() for p in ([path] if path.is_file() else path.with_suffix("").glob("*.py")))
        for metric in card.metrics:
            assert f'"{metric}"' in code + text_world or metric in ("conservation_ok", "stage_solvent"), (name, metric)
        assert (ROOT / "docs" / card.results).is_file(), name
    assert "| Default size | 1000 episodes in batches of 1, 30 agents" in scenario_cards.markdown()


class _Page:
    class file:
        src_uri = "page.md"


def test_formulas_become_mathml_and_an_unknown_command_is_a_warning(caplog):
    html = ('<p><span class="arithmatex">\\(A_g = (r_g - \\bar r) / \\sigma &lt; 1\\)</span></p>'
            '<div class="arithmatex">\\[\\Big\\lfloor x \\Big\\rfloor\\]</div>')
    out = render_hooks.on_page_content(html, _Page, None, None)
    assert "arithmatex" not in out and out.count("<math") == 2 and 'display="block"' in out
    assert "&#x0230A;" in out and "\\" not in out
    with caplog.at_level(logging.WARNING, logger="mkdocs.hooks.catallax.render"):
        render_hooks.on_page_content('<span class="arithmatex">\\(\\nosuchcommand x\\)</span>', _Page, None, None)
    assert "not drawn as MathML" in caplog.text or "cannot be made" in caplog.text
