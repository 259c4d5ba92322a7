"""The rule DSL: parse/describe, the vectorized evaluator against plain Python, syntax errors, inheritance."""

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agents import RulePolicy, RuleSpace, RuleSyntaxError
from agents import rules as R

SPACE = RuleSpace(features=("stage", "prefix", "top"), low=(0, 0, -2), high=(4, 6, 2),
                  actions=("advance", "unstack", "noop"), max_terms=3)
PY_OPS = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}

terms = st.tuples(st.sampled_from(SPACE.features), st.sampled_from(list(PY_OPS)), st.integers(-8, 8))
rules = st.tuples(st.lists(terms, max_size=SPACE.max_terms), st.sampled_from(SPACE.actions))


def text_of(rule) -> str:
    conds, action = rule
    return f"{' and '.join(f'{f} {o} {v}' for f, o, v in conds) or 'always'} -> {action}"


def python_holds(rule, obs_row) -> bool:
    return all(PY_OPS[o](obs_row[SPACE.features.index(f)], v) for f, o, v in rule[0])


def compiled(texts):
    table = R.empty_rules(len(texts), SPACE.max_terms)
    for row, t in enumerate(texts):
        R.compile_into(table, row, t, SPACE)
    return table


@pytest.mark.parametrize("text", [
    "stage == 2 -> advance",
    "always -> noop",
    "prefix >= 3 and top == 1 -> unstack",
    "stage != 0 and prefix < 6 and top > -2 -> noop",
])
def test_describe_gives_back_the_text(text):
    assert R.describe(compiled([text]), 0, SPACE) == text


def test_parse_tolerates_spacing_and_canonicalises():
    table = compiled(["  stage==2   and top<=-1->advance "])
    assert R.describe(table, 0, SPACE) == "stage == 2 and top <= -1 -> advance"


@settings(max_examples=50, deadline=None)
@given(st.lists(rules, min_size=1, max_size=6),
       st.lists(st.tuples(st.integers(-5, 9), st.integers(-5, 9), st.integers(-5, 9)), min_size=1, max_size=6))
def test_evaluate_matches_python(rule_list, observations):
    texts = [text_of(r) for r in rule_list]
    table = compiled(texts)
    for row, t in enumerate(texts):
        described = R.describe(table, row, SPACE)
        assert R.parse(described, SPACE) == R.parse(t, SPACE)  # round trip through the canonical text
    obs = np.array(observations, dtype=np.int64)
    got = R.evaluate(table, obs)
    assert got.shape == (len(observations), len(rule_list))
    for b, o in enumerate(observations):
        for n, r in enumerate(rule_list):
            assert got[b, n] == python_holds(r, o), (text_of(r), o)
    actions = np.array([SPACE.actions.index(r[1]) for r in rule_list])
    assert (table.action == actions).all()


@pytest.mark.parametrize("text, problem", [
    ("stage == 2 advance", "missing '->'"),
    ("stage == 2 -> jump", "unknown action 'jump'"),
    ("depth == 2 -> advance", "unknown feature 'depth'"),
    ("stage = 2 -> advance", "cannot read term 'stage = 2'"),
    ("stage == two -> advance", "cannot read term 'stage == two'"),
    ("-> advance", "cannot read term ''"),
    ("stage == 1 and -> advance", "cannot read term"),
    ("stage == 1 and stage == 2 and top == 0 and prefix == 1 -> noop", "4 terms, at most 3"),
])
def test_syntax_errors_name_the_problem(text, problem):
    with pytest.raises(RuleSyntaxError) as err:
        R.parse(text, SPACE)
    assert problem in str(err.value)
    assert isinstance(err.value, ValueError)


def test_policy_seed_rules_then_random_ones():
    policy = RulePolicy(SPACE, initial_rules=["stage == 1 -> advance", "always -> noop"])
    policy.resize(8)
    policy.spawn(np.array([1, 2, 3, 4]), np.random.default_rng(0))
    described = policy.describe(np.arange(1, 5))
    assert described[:2] == ["stage == 1 -> advance", "always -> noop"]
    for text in described[2:]:  # default newcomers: one `feature == value` term within bounds
        (term,), _ = R.parse(text, SPACE)
        assert term[1] == R.OPS["=="] and SPACE.low[term[0]] <= term[2] <= SPACE.high[term[0]]
    obs = np.array([[1, 0, 0], [2, 0, 0]])
    eligible = policy.eligible(obs)
    assert eligible[:, 1].tolist() == [True, False] and eligible[:, 2].all()
    assert policy.act(obs, np.array([1, -1])).tolist() == [0, -1]


def test_inherit_stays_in_bounds_and_usually_changes_the_rule():
    rng = np.random.default_rng(0)
    n = 400
    policy = RulePolicy(SPACE)
    policy.resize(2 * n + 1)
    parents = np.arange(1, n + 1)
    children = parents + n
    policy.spawn(parents, rng)
    for _ in range(3):  # three generations: the children are next round's parents
        policy.inherit(children, parents, rng)
        r = policy.rules
        used = r.op[children] != R.ALWAYS
        feature = r.feature[children]
        assert ((feature >= 0) & (feature < len(SPACE.features)))[used].all()
        low, high = np.array(SPACE.low)[feature], np.array(SPACE.high)[feature]
        assert ((r.value[children] >= low) & (r.value[children] <= high))[used].all()
        assert ((r.action[children] >= 0) & (r.action[children] < len(SPACE.actions))).all()
        before = policy.describe(parents)
        after = policy.describe(children)
        for text in after:
            R.parse(text, SPACE)  # every child is a valid rule
        changed = np.mean([a != b for a, b in zip(before, after)])
        assert 0.6 < changed < 1.0  # usually a different rule; some edits land where they started
        for name in ("feature", "op", "value", "action"):
            getattr(r, name)[parents] = getattr(r, name)[children]


def test_inherit_copies_the_parent_before_editing():
    policy = RulePolicy(SPACE, initial_rules=["stage == 2 and top > 0 -> unstack"])
    policy.resize(4)
    policy.spawn(np.array([1]), np.random.default_rng(0))
    policy.inherit(np.array([2, 3]), np.array([1, 1]), np.random.default_rng(1))
    parent_terms, parent_action = R.parse(policy.describe([1])[0], SPACE)
    for text in policy.describe([2, 3]):
        terms, action = R.parse(text, SPACE)
        shared = [t for t in terms if t in parent_terms]
        assert len(shared) >= len(parent_terms) - 1  # at most one term edited or dropped
        assert action == parent_action or shared == terms == parent_terms


def test_state_dict_round_trip():
    policy = RulePolicy(SPACE, initial_rules=["stage == 2 -> advance", "always -> noop"])
    policy.resize(4)
    policy.spawn(np.array([1]), np.random.default_rng(0))
    other = RulePolicy(SPACE)
    other.load_state_dict(policy.state_dict())
    assert other.describe([0, 1]) == policy.describe([0, 1])
    other.spawn(np.array([2]), np.random.default_rng(0))
    assert other.describe([2]) == ["always -> noop"]  # the unused seed rule travels with the state


@pytest.mark.parametrize("features", [3, 1])  # one feature: the compiled loop without a gather
@pytest.mark.parametrize("order", ["F", "C"])  # empty_rules' column-major arrays, and rows-major ones
@pytest.mark.parametrize("distinct", [0, 1 << 30])  # the compiled pass over each distinct observation, or every one
def test_small_and_large_evaluation_agree(monkeypatch, features, order, distinct):
    """Small economies take every term at once on numpy, larger ones one compiled pass (agents/rules_kernel.py),
    the largest over each distinct observation once: the same holds."""
    rng = np.random.default_rng(3)
    table = R.empty_rules(40, SPACE.max_terms)
    table.feature[:] = rng.integers(features, size=table.feature.shape)
    table.op[:] = rng.choice([*R.OPS.values(), R.ALWAYS], size=table.op.shape)
    table.value[:] = rng.integers(-2, 4, size=table.value.shape)
    table = R.CompiledRules(*(np.array(getattr(table, name), order=order) for name in R.FIELDS))
    obs = rng.integers(-2, 4, size=(30, features))  # repeated rows: the distinct pass maps them back
    # each path chosen explicitly: at the default threshold these 30 x 40 cells take the compiled path both times
    monkeypatch.setattr(R, "_SMALL", obs.shape[0] * table.action.size)
    small = R.evaluate(table, obs)
    monkeypatch.setattr(R, "_SMALL", 0)
    monkeypatch.setattr(R, "_DISTINCT", distinct)
    assert (R.evaluate(table, obs) == small).all()
    assert small.any() and not small.all()  # the rules tell observations apart


def test_distinct_rows_gives_each_row_once_in_first_seen_order():
    obs = np.array([[1, 2], [0, 0], [1, 2], [3, 1], [0, 0]])
    distinct, inverse = R.distinct_rows(obs)
    assert distinct.tolist() == [[1, 2], [0, 0], [3, 1]] and inverse.tolist() == [0, 1, 0, 2, 1]
    assert (distinct[inverse] == obs).all()


def test_a_space_with_more_features_than_an_int16_index_is_refused():
    """A rule's feature index is an int16 (a million rules are held at once): a larger space would wrap."""
    names = tuple(f"f{i}" for i in range(np.iinfo(R.FEATURE_DTYPE).max + 1))
    with pytest.raises(ValueError, match="features"):
        R.RuleSpace(names, (0,) * len(names), (1,) * len(names), ("a",))
    R.RuleSpace(names[:-1], (0,) * (len(names) - 1), (1,) * (len(names) - 1), ("a",))
