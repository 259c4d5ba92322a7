"""The ladder the plugin tests write out as a user's scenario file: climb the rungs, one climber per rung.

One text for the three files they write (a ``market.World`` subclass, a plain class as interface 1 allows, a
policy that reports tokens), so a change to the world is made once.
"""


def ladder(name: str = "Ladder", base: str = "(World)") -> str:
    """The world class's source, named ``name`` with ``base`` (``""``: a plain class)."""
    return f'''
class {name}{base}:
    def __init__(self, cfg):
        self.rungs, self.horizon = cfg.rungs, 3 * cfg.rungs
        self.at = np.zeros(1, dtype=np.int64)

    def reset(self, batch, rng):
        self.at = np.zeros(batch, dtype=np.int64)

    def observe(self):
        return self.at[:, None]

    def step(self, actions, acting):
        self.at = self.at + (acting & (actions == self.at))
        done = self.at == self.rungs
        return done.astype(float), done

    @property
    def solved(self):
        return self.at == self.rungs
'''


CLIMBERS = 'RuleSpace(("rung",), (0,), (cfg.rungs - 1,), tuple(f"climb_{r}" for r in range(cfg.rungs)), max_terms=1)'
"""The rule space of one climber per rung, as the build functions write it."""
