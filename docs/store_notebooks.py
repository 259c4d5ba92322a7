"""Execute the notebooks and store them with their outputs: ``python -m docs.store_notebooks [NAME ...]``.

The site and a code host show a notebook as it is stored, so the tutorials are stored executed: their figures
and printed results are part of the file. Run this after changing a notebook (the LLM ones take minutes on a
CPU). Each runs in ``notebooks/`` as a user runs it (tests/test_notebooks.py checks it writes nothing beside
itself); the cells' execution timestamps are dropped, so a re-run changes only what the code printed or drew.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def store(path: Path, timeout: int) -> None:
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=timeout, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell in nb.cells:
        cell.metadata.pop("execution", None)
    nbformat.write(nb, path)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", help="notebook names without .ipynb (default: all)")
    parser.add_argument("--timeout", type=int, default=900, help="seconds a cell may run")
    args = parser.parse_args(argv)
    paths = [NOTEBOOKS / f"{n}.ipynb" for n in args.names] or sorted(NOTEBOOKS.glob("*.ipynb"))
    for path in paths:
        store(path, args.timeout)
        print(f"stored {path.name} executed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
