"""Scenarios: worlds, their runnable definitions (*.toml), the runner and the CLI."""
