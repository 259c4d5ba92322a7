"""Scenarios: the worlds (relay.py, blocks/, boltzmann.py, recsys/, wordmath.py) with their scenario files
(*.toml) and credit signals, the Scenario interface (registry.py), and the front end in rooms of its own:
run/ (config, runner, sweep), report/ (figures, dashboard), cli/ (the ``catallax`` command)."""
