"""A stored plugin path inside the Python installation is never imported, whatever hash the database stores:
the installation's files are public, so a matching sha256 proves nothing, and importing some of them acts
(``this`` prints, ``idlelib.idle`` opens a window). The check is on the resolved path, so a symlink elsewhere
that points into the installation is refused too."""

import hashlib
import json
import sysconfig
from pathlib import Path

import pytest

from tests.reliability.test_stored_code import cli, interrupted, relay_run, sql, status

ZEN = "Beautiful is better than ugly"


def public_hash(path: Path) -> str:
    """The content hash a run stores for a plugin file (its absolute path and bytes), as an attacker would
    compute it for a public file."""
    return hashlib.sha256(str(path).encode() + b"\0" + path.read_bytes() + b"\0").hexdigest()


@pytest.mark.parametrize("via", ["stdlib", "symlink"])
def test_a_stored_installation_file_with_its_true_hash_is_not_imported(tmp_path, capsys, via):
    url, run_id = relay_run(tmp_path, capsys)
    path = Path(sysconfig.get_path("stdlib")) / "this.py"
    if via == "symlink":
        link = tmp_path / "elsewhere" / "zen.py"
        link.parent.mkdir()
        link.symlink_to(path)
        path = link
    config = json.loads(sql(url, "SELECT config FROM run")[0][0])
    config["run"]["scenario"] = str(path)
    config["catallax:plugin"] = {"scenario": str(path), "sha256": public_hash(path)}
    sql(url, "UPDATE run SET config = ?", args=(json.dumps(config),))
    interrupted(url, run_id)
    code, out, err = cli(["resume", run_id, "--db", url], capsys)
    assert ZEN not in out + err  # nothing was imported
    assert code == 2 and "Python installation" in err and len(err.strip().splitlines()) == 1, err
    assert status(url, run_id) == ("interrupted", 0)
