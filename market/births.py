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
    by_wealth = live[np.argsort(-wealth[live], kind="stable")]  # richest first

    n_exploit = min(rng.binomial(n_episodes, cfg.p_exploit), live.size)
    exploit = by_wealth[:n_exploit]

    n_explore = rng.binomial(n_episodes, cfg.p_explore)
    failed = np.concatenate([bankrupt, by_wealth[::-1]])  # the bankrupt first, then the poorest
    explore = failed[:n_explore]

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
