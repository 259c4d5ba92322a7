"""The world zoo (scenarios/recsys/zoo.py) and the start's floor (seeds.combined): a tiny world each."""

from dataclasses import replace
from types import SimpleNamespace

import numpy as np

from scenarios.recsys import movielens, seeds, zoo
from scenarios.recsys.data import VALIDATION
from scenarios.recsys.pipeline import Compiled

from tests.scenarios.recsys_small import small_world


def tiny(seed: int) -> zoo.Recipe:
    r = zoo.recipe(seed)
    return replace(r, world={**r.world, "users": 60, "items": 40, "pool": 30})


def test_evaluation_seeds_are_fixed_fifty_and_apart_from_the_development_seeds():
    assert len(zoo.EVAL_SEEDS) == 50 and len(set(zoo.EVAL_SEEDS)) == 50
    assert not set(zoo.EVAL_SEEDS) & set(zoo.DEV_SEEDS)


def test_a_seed_names_one_world_and_seeds_draw_different_ones():
    assert zoo.recipe(7) == zoo.recipe(7)
    drawn = [zoo.recipe(s) for s in zoo.DEV_SEEDS]
    assert len({(r.world["items"], r.sequential, r.layout) for r in drawn}) == len(drawn)
    assert {r.layout for r in drawn} == set(movielens.FILES) and {r.genres_written for r in drawn} == {True, False}
    assert len({r.feedback for r in drawn}) >= 3


def test_a_zoo_world_is_read_by_the_movielens_loader_bytes_fixed_by_its_seed(tmp_path, monkeypatch):
    for seed in zoo.DEV_SEEDS[:4]:  # both layouts
        r = tiny(seed)
        monkeypatch.setattr(zoo, "recipe", lambda s, r=r: r)
        path = zoo.write(seed, tmp_path / str(seed))
        again = zoo.write(seed, tmp_path / f"{seed}-again")
        assert path.read_bytes() == again.read_bytes() and path.name == r.layout
        log = movielens.load(path)
        user, item, stars, _, _ = zoo.ratings(r)
        assert log.user.size == user.size == np.unique(user * 1000 + item).size  # an item once per user
        assert (len(log.genres) > 1) == r.genres_written
        if r.feedback == "implicit":
            assert (stars == 1).all()
        else:
            lo, hi, _ = zoo.SCALES[r.feedback]
            assert stars.min() >= lo and stars.max() <= hi


def test_the_chosen_start_is_at_least_the_as_written_one_and_near_the_baseline_alone_on_validation():
    w = small_world()
    users = w.data.users(VALIDATION)
    best = w.signals.tuned.best
    score = lambda skills: w.pipeline.evaluate(  # noqa: E731
        Compiled.of([SimpleNamespace(name=n, role=r, rule=rule) for n, r, _, rule in skills]), users).mean()
    chosen = score(seeds.combined(best, w.pipeline, users))
    assert chosen >= score(seeds.INITIAL + seeds.best_baseline(best))
    assert chosen >= score(seeds.best_baseline(best)) - 0.02
    top = seeds._shared(seeds.INITIAL + seeds.best_baseline(best), {n for n, *_ in seeds.best_baseline(best)}, 0.95)
    weight = {n: sum(c.param("weight") for c in seeds.rules.parse(rule, r)) for n, r, _, rule in top if r == "rank"}
    assert abs(sum(weight.values()) - 3.4) < 1e-3  # the role's total weight is kept
    assert weight[f"rank-{best.replace('_', '-')}"] / sum(weight.values()) > 0.94


def test_a_planted_skill_fires_on_the_easier_side_of_its_median():
    w = small_world()
    users = w.data.users(VALIDATION)
    easy = seeds.easiness(w, users)
    for name, role, _, rule in seeds.harmful("any_data", w.pipeline.features, easy):
        lib = Compiled.of([SimpleNamespace(name=name, role=role, rule=rule)])
        fires = w.pipeline.applicable(lib, users)[:, 0]
        assert easy[1][fires].mean() >= easy[1][~fires].mean(), rule


class Scripted:
    """A pipeline whose validation scores are written by hand per blend: the best alone 0.5 for each of 8 users;
    ease at 30% adds 0.01 for every user (a gain the paired test sees); trending at 50% adds 0.16 for one user only
    (a larger mean gain, p = 0.5: luck)."""

    def evaluate(self, lib, users):
        text = " ".join(clause for _, role in lib.key for _, clause in role)
        score = np.full(users.size, 0.5)
        if "ease(weight=0.3)" in text:
            score += 0.01
        if "trending(weight=0.5)" in text:
            score[0] += 0.16
        return score


def test_a_blend_of_tuned_baselines_replaces_the_best_alone_only_on_a_gain_the_paired_test_sees():
    chosen = seeds.tuned_blend("next", Scripted(), np.arange(8))
    rules = {name: rule for name, _, _, rule in chosen}
    assert rules == {"recall-next": "always -> next(weight=0.7)", "rank-next": "always -> next(weight=0.7)",
                     "recall-ease": "always -> ease(weight=0.3)", "rank-ease": "always -> ease(weight=0.3)"}
    flat = type("Flat", (), {"evaluate": lambda self, lib, users: np.full(users.size, 0.5)})()
    assert seeds.tuned_blend("next", flat, np.arange(8)) == seeds.best_baseline("next")  # no gain: the best alone
