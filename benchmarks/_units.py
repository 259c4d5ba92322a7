"""What the benchmark scripts share: how a size is spelled in their JSON keys and tables."""


def label(n: int) -> str:
    """1_000_000 -> "1M", 10_000 -> "10k", 250 -> "250"."""
    return f"{n // 1_000_000}M" if n % 1_000_000 == 0 else f"{n // 1000}k" if n % 1000 == 0 else str(n)
