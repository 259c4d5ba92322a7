"""Strings from a database reach the terminal and the report as text: a foreign run whose scenario, status and
summary hold terminal escape sequences (retitle, clear the screen), C1 controls, bidi overrides and HTML is
printed by ``resume`` and written by ``report`` with every one of them shown, not acted on or rendered."""

import json

from market.escape import markdown, markdown_code, terminal
from tests.reliability.test_stored_code import cli, relay_run, sql

HOSTILE = "\x1b]0;owned\x07\x1b[2J\x9b31m\u202e<img src=x onerror=alert(1)>*bold*|cell"
"""A retitle (OSC), a clear-screen (CSI), an 8-bit CSI, a right-to-left override, HTML and Markdown markup."""

ACTIVE = ("\x1b", "\x07", "\x9b", "\u202e")


def test_the_helpers_leave_no_control_character_and_no_markup():
    for shown in (terminal(HOSTILE), markdown(HOSTILE), markdown_code(HOSTILE)):
        assert not any(c in shown for c in ACTIVE)
    assert "\\x1b]0;owned" in terminal(HOSTILE)
    assert "<img" not in markdown(HOSTILE) and "&lt;img" in markdown(HOSTILE) and "\\*bold\\*" in markdown(HOSTILE)
    assert markdown_code("a`b|c") == "`a'b\\|c`"
    assert terminal("line\nnext", keep="\n") == "line\nnext" and terminal("line\nnext") == "line\\nnext"


def hostile_run(tmp_path, capsys) -> tuple[str, str]:
    url, run_id = relay_run(tmp_path, capsys)
    summary = json.loads(sql(url, "SELECT summary FROM run WHERE id = ?", args=(run_id,))[0][0])
    summary["note"] = HOSTILE
    summary[HOSTILE] = 1
    sql(url, "UPDATE run SET scenario = ?, summary = ? WHERE id = ?", args=(HOSTILE, json.dumps(summary), run_id))
    return url, run_id


def test_resume_of_a_finished_foreign_run_prints_its_summary_as_text(tmp_path, capsys):
    url, run_id = hostile_run(tmp_path, capsys)
    code, out, err = cli(["resume", run_id, "--db", url], capsys)
    assert code in (0, None), err
    assert "\\x1b]0;owned" in out and not any(c in out + err for c in ACTIVE)


def test_report_writes_database_strings_escaped_into_summary_md(tmp_path, capsys):
    url, run_id = hostile_run(tmp_path, capsys)
    sql(url, "UPDATE run SET status = ? WHERE id = ?", args=("finished" + HOSTILE, run_id))
    code, out, err = cli(["report", run_id, "--db", url, "--out", str(tmp_path / "report"), "--json"], capsys)
    assert code in (0, None), err
    text = open(json.loads(out.splitlines()[-1])["summary"], encoding="utf-8").read()
    assert not any(c in text for c in ACTIVE)
    assert "<img" not in text and text.count("&lt;img src=x onerror=alert(1)&gt;") >= 4  # scenario, status, key, value
    assert not any(c in out + err for c in ACTIVE)
