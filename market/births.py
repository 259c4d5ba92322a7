"""Who is born after a round of episodes, and from whom.

Births follow Economy of Minds and Hayek:

* **exploit**: per episode, with probability ``p_exploit`` the richest agents
  (richest first) each get a child: a mutated copy of their skills;
* **explore**: per episode, with probability ``p_explore`` an agent that went
  bankrupt this round (else the poorest live agent) is revised into a child;
* **periodic**: every ``birth_interval`` episodes a random newcomer;
* **bounds**: births stop at ``max_agents``; random newcomers fill the
  population up to ``min_agents``.
* ``births = False`` (ablation): none of the above; the population only shrinks.

The plan is a list of parent rows (-1 = a random newcomer) in a fixed order
(exploit, explore, periodic, floor), so the same RNG state gives the same plan;
``with_kinds=True`` also returns each birth's kind (EXPLOIT, EXPLORE, PERIODIC,
FLOOR), so a policy can revise an explore child from its parent's failure.
"""

from __future__ import annotations

import numpy as np

from market.config import PopulationConfig

RANDOM_NEWCOMER = -1
EXPLOIT, EXPLORE, PERIODIC, FLOOR = range(4)


def plan_births(
    wealth: np.ndarray,
    traders: np.ndarray,
    bankrupt: np.ndarray,
    episodes: tuple[int, int],
    cfg: PopulationConfig,
    rng: np.random.Generator,
    with_kinds: bool = False,
):
    """Parent rows for this round's newborns (-1: random newcomer), and their kinds if asked.

    ``traders`` is the live mask *after* bankruptcies; ``bankrupt`` holds the
    rows that died this round (their skills are still readable);
    ``episodes`` = (completed before the round, completed after it).
    """
    before, after = episodes
    n_episodes = after - before
    live = np.flatnonzero(traders)
    # the richest, richest first (ties: lower row first); the poorest, poorest first (ties: higher row first).
    # Most rounds of a small batch have no such birth: then no key is gathered (50 us at N = 10k).
    n_exploit = rng.binomial(n_episodes, cfg.p_exploit)
    exploit = live[first_sorted(-wealth[live], n_exploit)] if n_exploit else live[:0]
    n_explore = rng.binomial(n_episodes, cfg.p_explore)
    by_row_down = live[::-1]
    n_poorest = n_explore - bankrupt.size
    poorest = by_row_down[first_sorted(wealth[by_row_down], n_poorest)] if n_poorest > 0 else live[:0]
    explore = np.concatenate([bankrupt, poorest])[:n_explore]  # the bankrupt first

    periodic = after // cfg.birth_interval - before // cfg.birth_interval if cfg.birth_interval else 0
    parents = np.concatenate([exploit, explore, np.full(periodic, RANDOM_NEWCOMER)]).astype(np.int64)
    kinds = np.repeat([EXPLOIT, EXPLORE, PERIODIC], [exploit.size, explore.size, periodic])

    room = max(cfg.max_agents - live.size, 0)
    parents, kinds = parents[:room], kinds[:room]
    shortfall = cfg.min_agents - live.size - parents.size
    if shortfall > 0:
        parents = np.concatenate([parents, np.full(shortfall, RANDOM_NEWCOMER, dtype=np.int64)])
        kinds = np.concatenate([kinds, np.full(shortfall, FLOOR)])
    if not cfg.births:
        parents, kinds = parents[:0], kinds[:0]
    return (parents, kinds) if with_kinds else parents


def first_sorted(keys: np.ndarray, k: int) -> np.ndarray:
    """``np.argsort(keys, kind="stable")[:k]`` without sorting every key: a round's few parents out of a large
    population (a partition finds the k-th key at a fraction of a stable sort's cost)."""
    k = max(min(k, keys.size), 0)
    if k == 0:
        return np.empty(0, dtype=np.intp)
    if k == keys.size:
        return np.argsort(keys, kind="stable")
    kth = np.partition(keys, k - 1)[k - 1]
    below = np.flatnonzero(keys < kth)  # fewer than k, and all of them come first
    return np.concatenate([below[np.argsort(keys[below], kind="stable")], np.flatnonzero(keys == kth)[: k - below.size]])
