"""Scripts behind the README's tables (not installed). Each runs as ``python -m experiments.NAME`` and is tested at toy size."""
