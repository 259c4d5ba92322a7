"""A SKILL.md folder from anyone is read within bounds (issue 52, cases 4, 5 and 8's skill files): no alias
bombs, no symlinks, FIFOs or devices, size caps, plain-string fields; what ``skills list``/``show`` print
carries no terminal control sequence."""

import os
import sqlite3
import threading

import pytest

from skills.skillmd_parse import MAX_BODY_CHARS, MAX_FILE_BYTES
from tests.reliability.test_stored_code import cli

HEAD = "---\nname: tidy\ndescription: Keep it tidy.\n"


def skill(tmp_path, front_extra="", body="Tidy up.", name="tidy") -> tuple:
    root = tmp_path / "in"
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "SKILL.md").write_text(HEAD.replace("tidy", name, 1) + front_extra + "---\n" + body + "\n")
    return root, folder


def import_(tmp_path, capsys, root) -> tuple[int, str]:
    db = tmp_path / "lib.db"
    code, _, err = cli(["skills", "import", str(root), "--db", f"sqlite:///{db}"], capsys)
    return code, err


def alias_bomb(levels: int) -> str:
    lines = ['license: &a0 "xxxxxxxxxx"']
    lines += [f"compatibility: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, levels)]
    return "\n".join(lines[:1]) + "\nmetadata:\n" + "".join(f"  k{i}: {line.split(': ', 1)[1]}\n"
                                                             for i, line in enumerate(lines[1:]))


CASES = {  # front matter / body -> the field the one line names
    "alias bomb": (alias_bomb(6), "Tidy up.", "anchors and aliases"),
    "date license (case 8)": ("license: 2020-01-01\n", "Tidy up.", "license"),
    "huge version (case 8)": ("metadata:\n  version: 99999999999999999999999\n", "Tidy up.", "metadata.version"),
    "superscript version (case 8)": ("metadata:\n  version: \"²\"\n", "Tidy up.", "metadata.version"),
    "list compatibility": ("compatibility: [a, b]\n", "Tidy up.", "compatibility"),
    "long compatibility": ("compatibility: " + "x" * 501 + "\n", "Tidy up.", "compatibility"),
    "5000-digit integer": ("metadata:\n  version: " + "9" * 5000 + "\n", "Tidy up.", "front matter"),
    "deep nesting": ("license: " + "[" * 5000 + "]" * 5000 + "\n", "Tidy up.", "front matter"),
    "30 MB body (case 4)": ("", "x" * (MAX_BODY_CHARS + 1), "body"),
    "bool metadata": ("metadata:\n  status: yes\n", "Tidy up.", "metadata.status"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_bad_skill_file_is_one_line_naming_file_and_field(tmp_path, capsys, case):
    front, body, field = CASES[case]
    root, folder = skill(tmp_path, front, body)
    code, err = import_(tmp_path, capsys, root)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert str(folder / "SKILL.md") in err and field in err, err
    assert len(err) < 2000
    assert not (tmp_path / "lib.db").exists() or sqlite3.connect(tmp_path / "lib.db").execute(
        "SELECT count(*) FROM sqlite_master WHERE name = 'skill'").fetchone()[0] == 0


def test_a_date_is_refused_whatever_another_library_did_to_yaml_s_shared_safe_loader(tmp_path, capsys, monkeypatch):
    """lm-format-enforcer (imported with vLLM) makes ``yaml.SafeLoader`` read timestamps as strings, process-wide;
    done here as it does it, so a file must be refused the same in a process that has loaded an LLM engine."""
    import yaml
    monkeypatch.setitem(yaml.SafeLoader.yaml_constructors, "tag:yaml.org,2002:timestamp",
                        yaml.SafeLoader.yaml_constructors["tag:yaml.org,2002:str"])
    root, folder = skill(tmp_path, "license: 2020-01-01\n")
    code, err = import_(tmp_path, capsys, root)
    assert code == 2 and str(folder / "SKILL.md") in err and "license" in err, err


def test_case_4_an_oversized_file_is_not_read(tmp_path, capsys):
    root, folder = skill(tmp_path, body="x" * (MAX_FILE_BYTES + 10))
    code, err = import_(tmp_path, capsys, root)
    assert code == 2 and f"larger than {MAX_FILE_BYTES}" in err and str(folder / "SKILL.md") in err


@pytest.mark.parametrize("kind", ["dev-zero", "fifo", "symlink-to-file", "versions-dir", "non-utf8"])
def test_case_4_only_regular_files_are_read(tmp_path, capsys, kind):
    root, folder = skill(tmp_path)
    target = folder / "SKILL.md"
    if kind == "dev-zero":
        target.unlink()
        os.symlink("/dev/zero", target)
    elif kind == "fifo":
        target.unlink()
        os.mkfifo(target)
    elif kind == "symlink-to-file":
        real = tmp_path / "real.md"
        real.write_text(target.read_text())
        target.unlink()
        os.symlink(real, target)
    elif kind == "versions-dir":  # case 8: a versions/v2.md that is a directory
        (folder / "versions" / "v2.md").mkdir(parents=True)
        target = folder / "versions" / "v2.md"
    else:
        target.write_bytes(b"---\nname: tidy\ndescription: \xff\xfe\n---\nx\n")
    result = {}
    worker = threading.Thread(target=lambda: result.update(zip(("code", "err"), import_(tmp_path, capsys, root))))
    worker.start()
    worker.join(timeout=30)
    if worker.is_alive():  # a FIFO that hangs the import: unblock it, then fail
        with open(target, "w"):
            pass
        worker.join()
        pytest.fail("the import hung on a FIFO")
    assert result["code"] == 2 and str(target) in result["err"], result


def test_case_5_list_and_show_print_no_terminal_escapes(tmp_path, capsys):
    root, _ = skill(tmp_path, body="Tidy \x1b]0;owned\x07 up.\n\x1b[2J")
    db = f"sqlite:///{tmp_path / 'lib.db'}"
    code, _, err = cli(["skills", "import", str(root), "--db", db], capsys)
    assert code in (0, None), err
    con = sqlite3.connect(tmp_path / "lib.db")
    con.execute("UPDATE skill SET description = ?", ("Keep \x1b[31mred\x1b[0m \u202eevil\r tidy.",))
    con.commit()
    con.close()
    for argv in (["skills", "list", "--db", db], ["skills", "show", "tidy", "--db", db],
                 ["skills", "lineage", "--db", db]):
        code, out, _ = cli(argv, capsys)
        assert code in (0, None)
        assert not any(c in out for c in "\x1b\x07\r\u202e"), (argv, out)
    code, out, _ = cli(["skills", "list", "--db", db], capsys)
    assert "\\x1b[31mred" in out  # shown, escaped
