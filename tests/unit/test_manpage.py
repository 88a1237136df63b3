"""zfs-advisor(1) is written from the parser (advisor/cli/manpage.py): every command and option the
program takes is in it, and groff reads it without a warning (what lintian checks in the package)."""
from __future__ import annotations

import datetime as dt
import re
import shutil
import subprocess

import pytest

from advisor.cli import SUBCOMMANDS, build_parser
from advisor.cli.manpage import escape, render

PAGE = render(dt.date(2026, 12, 7))


def _subparsers():
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    return sub.choices


def test_every_command_and_option_is_in_the_page():
    choices = _subparsers()
    assert set(choices) == set(SUBCOMMANDS)
    for name, parser in choices.items():
        assert f".SS {name}\n" in PAGE
        section = PAGE.split(f".SS {name}\n", 1)[1].split("\n.SS ", 1)[0]
        for action in parser._actions:
            for option in action.option_strings:
                assert f"\\fB{escape(option)}\\fR" in section, (name, option)


def test_a_line_never_reads_as_a_request():
    assert escape(".hidden") == "\\&.hidden" and escape("'quote") == "\\&'quote"
    assert escape("a\\b --x") == "a\\eb \\-\\-x"
    requests = (".TH ", ".SH ", ".SS ", ".TP", ".PP", ".B ", ".ad l", ".nh")
    body = [line for line in PAGE.splitlines() if not line.startswith(requests)]
    assert not [line for line in body if line.startswith((".", "'"))]


@pytest.mark.skipif(shutil.which("groff") is None, reason="groff (Debian: groff-base; tests/run installs it)")
def test_groff_reads_it_without_a_warning(tmp_path):
    page = tmp_path / "zfs-advisor.1"
    page.write_text(PAGE)
    done = subprocess.run(["groff", "-man", "-ww", "-z", "-Tutf8", str(page)], capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    text = subprocess.run(["groff", "-man", "-Tutf8", str(page)], capture_output=True, text=True).stdout
    text = re.sub(".\b", "", text).replace("\u2010", "-").replace("\u2212", "-")  # no overstrike, ASCII hyphens
    assert "zfs-advisor recommend [-h]" in text and "--workload" in text
