"""Running experiments: a TOML file -> validated config (config.py) -> a persisted run (runner.py), many on Ray (sweep.py)."""
