"""Files written under a folder from names that came from data (a skill's name, a run id): never outside it.

A database or a skill folder may come from anyone, so a name read from one is
a path component to check, not to trust: :func:`under` refuses a part that is
empty, ``.``/``..``, or holds a separator, and a path that resolves outside
the folder. :func:`write` creates a file without following a symlink planted
where it goes: the bytes go to a new temporary file (``O_EXCL``) beside it,
which then replaces the directory entry (a planted symlink or hard link is
replaced, its target untouched); folders it creates below the named one must
not be symlinks either.
"""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: files are made with the mode open() would give them
RUN_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$")  # what a run id may be to become a folder name


class UnsafePath(ValueError):
    """A name that would leave its folder, or a symlink where a file or folder is written; one line."""


def run_id_part(run_id: str) -> str:
    """``run_id``, checked to be a plain folder-name part (at most 64 letters, digits, ``._-``, no ``..``)."""
    if not isinstance(run_id, str) or not RUN_ID.match(run_id) or ".." in run_id:
        raise UnsafePath(f"run id {run_id!r}: not a run id (at most 64 letters, digits, '.', '_' and '-')")
    return run_id


def under(folder: Path, *parts: str) -> Path:
    """``folder / parts...``, each part a plain name, the result inside ``folder`` once resolved."""
    for part in parts:
        if not part or part in (".", "..") or "/" in part or "\\" in part or "\0" in part:
            raise UnsafePath(f"{folder}: {part!r} is not a plain file or folder name")
    path = Path(folder).joinpath(*parts)
    if not path.resolve().is_relative_to(Path(folder).resolve()):
        raise UnsafePath(f"{path}: resolves outside {folder}")
    return path


def make_folders(folder: Path, path: Path) -> None:
    """Create ``path``'s parent folders below ``folder`` (which may exist), refusing symlinked ones."""
    below = path.parent.relative_to(folder)
    at = Path(folder)
    at.mkdir(parents=True, exist_ok=True)
    for part in below.parts:
        at = at / part
        try:
            at.mkdir()
        except FileExistsError:
            if at.is_symlink() or not at.is_dir():
                raise UnsafePath(f"{at}: a symlink or file where a folder goes; not followed") from None


def write(folder: Path, path: Path, data: bytes | str) -> Path:
    """Write ``data`` to ``path`` (inside ``folder``: see :func:`under`) without following symlinks."""
    make_folders(folder, path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
