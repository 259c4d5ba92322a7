"""Garbage into the rule DSL parser: a RuleSyntaxError naming the problem, never another exception.

Three sources of garbage: any unicode text; soups of the DSL's own tokens (names, operators, ``and``,
``->``, numbers up to thousands of digits), which reach the deeper branches; and valid rules with a
few characters changed. Whatever parses must compile, describe and parse back to the same rule.
"""

from hypothesis import example, given, settings
from hypothesis import strategies as st

from agents import RuleSpace, RuleSyntaxError
from agents import rules as R

SPACE = RuleSpace(features=("stage", "prefix", "top"), low=(0, 0, -2), high=(4, 6, 2),
                  actions=("advance", "unstack", "noop"), max_terms=3)
numbers = st.one_of(st.integers(-10**30, 10**30).map(str), st.integers(1, 6000).map(lambda n: "9" * n))
tokens = st.one_of(st.sampled_from([*SPACE.features, *SPACE.actions, *R.OPS, "and", "always", "->", "-", ">",
                                    "=", "", " ", "\n", "\t", "\x00", "é", "٣", "and and"]), numbers,
                   st.text(max_size=4))
soups = st.lists(tokens, max_size=12).flatmap(
    lambda ts: st.lists(st.sampled_from(["", " ", "  "]), min_size=len(ts), max_size=len(ts))
    .map(lambda seps: "".join(t + s for t, s in zip(ts, seps))))
valid = st.sampled_from(["stage == 2 -> advance", "always -> noop", "prefix >= 3 and top == -1 -> unstack"])
edited = st.tuples(valid, st.integers(0, 40), st.integers(0, 3), st.text(max_size=3)).map(
    lambda t: t[0][:t[1]] + t[3] + t[0][t[1] + t[2]:])


def parses_or_says_why(text: str) -> None:
    try:
        terms, action = R.parse(text, SPACE)
    except RuleSyntaxError as err:
        assert str(err).startswith("rule "), err  # names the rule it could not read
        return
    assert 0 <= action < len(SPACE.actions) and len(terms) <= SPACE.max_terms
    assert all(0 <= f < len(SPACE.features) and op in R.OPS.values() for f, op, _ in terms)
    table = R.empty_rules(1, SPACE.max_terms)
    R.compile_into(table, 0, text, SPACE)  # what parses fits the compiled arrays
    assert R.parse(R.describe(table, 0, SPACE), SPACE) == (terms, action)


@settings(max_examples=300, deadline=None)
@given(st.one_of(st.text(), soups, edited))
@example("stage == " + "1" * 5000 + " -> advance")  # once a ValueError from int(): Python's digit limit
@example("stage == 99999999999999999999 -> advance")  # once parsed, then an OverflowError when compiled
@example("stage == 123456789012345678 -> advance")  # 18 digits: still a rule
def test_garbage_is_a_syntax_error_or_a_rule(text):
    parses_or_says_why(text)
