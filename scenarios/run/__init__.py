"""Running experiments: a TOML file -> its effective, validated config (config.py: sections.py, derived.py,
rules.py) -> a persisted run (runner.py), many on Ray (sweep.py)."""
