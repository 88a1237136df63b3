"""zfs-advisor(1), written from the command line's own parser: every command and option the
program takes, with its help text, so the manual cannot drift from the program.

    python -m advisor.cli.manpage [--date YYYY-MM-DD] > zfs-advisor.1

The Debian package ships it (deploy/debian/build); `man -l zfs-advisor.1` reads it from a checkout.
"""
from __future__ import annotations

import argparse
import datetime as dt
import re
import sys

from advisor import __version__
from advisor.cli import SUBCOMMANDS, build_parser

# What the parser does not say: the exit codes main() returns, and the files the units use.
EXIT_STATUS = (("0", "success"), ("1", "the work failed (a command, a probe, the state database)"),
               ("2", "bad usage, settings or rules"))
FILES = (("/etc/zfs-advisor/config.toml", "the service's settings (TOML); every setting has an embedded default"),
         ("/var/lib/zfs-advisor", "the state directory: probe results, changes, the profiler's queue"))
SEE_ALSO = ("zfs(8)", "zpool(8)", "zfsprops(7)", "zfs(4)", "zpool-iostat(8)", "fio(1)", "systemd.service(5)")


def escape(text: str) -> str:
    """Text as troff prints it: backslashes and hyphens literal, no line read as a request."""
    text = " ".join(text.split()).replace("\\", "\\e").replace("-", "\\-")
    return re.sub(r"^([.'])", r"\\&\1", text)


def _usage(parser: argparse.ArgumentParser) -> str:
    usage = parser.format_usage().removeprefix("usage: ")
    return escape(usage)


def _option_heading(action: argparse.Action) -> str:
    names = action.option_strings or [str(action.metavar or action.dest)]
    if action.option_strings and action.nargs != 0:
        metavar = action.metavar or action.dest.upper()
        if isinstance(metavar, tuple):
            metavar = " ".join(metavar)
        return ", ".join(f"\\fB{escape(n)}\\fR \\fI{escape(str(metavar))}\\fR" for n in names)
    return ", ".join(f"\\fB{escape(str(n))}\\fR" for n in names)


def _options(parser: argparse.ArgumentParser) -> list[str]:
    lines = []
    for action in parser._actions:  # argparse keeps no public list of a parser's arguments
        if isinstance(action, argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        helptext = (action.help or "") % {"default": action.default, "prog": parser.prog} if action.help else ""
        if action.choices and not isinstance(action, argparse._SubParsersAction):
            helptext += f" (one of: {', '.join(map(str, action.choices))})"
        lines += [".TP", _option_heading(action), escape(helptext.strip()) or "\\&"]
    return lines


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help or "" for choice in sub._choices_actions}
    return [(name, helps.get(name, ""), sub.choices[name]) for name in SUBCOMMANDS]


def render(date: dt.date) -> str:
    parser = build_parser()
    out = [
        f'.TH ZFS-ADVISOR 1 "{date.isoformat()}" "zfs-advisor {escape(__version__)}" "User Commands"',
        ".ad l",  # ragged right, no hyphens: option names are read literally
        ".nh",
        ".SH NAME",
        "zfs\\-advisor \\- tuning advisor and Prometheus exporter for OpenZFS",
        ".SH SYNOPSIS",
        ".B zfs\\-advisor",
        "[\\fB\\-\\-version\\fR] \\fICOMMAND\\fR [\\fIOPTIONS\\fR]",
        ".SH DESCRIPTION",
        escape(parser.description or ""),
        "It advises: it never changes a user's dataset or pool. Its probes write only inside a scratch"
        " dataset of their own, within a quota and time budget, and remove it afterwards.",
        ".SH COMMANDS",
    ]
    for name, helptext, subparser in _subcommands(parser):
        out += [".SS " + escape(name), escape(helptext), ".PP", _usage(subparser)]
        out += _options(subparser)
    out.append(".SH EXIT STATUS")
    for code, meaning in EXIT_STATUS:
        out += [".TP", f"\\fB{code}\\fR", escape(meaning)]
    out.append(".SH FILES")
    for path, meaning in FILES:
        out += [".TP", f"\\fI{escape(path)}\\fR", escape(meaning)]
    out += [".SH SEE ALSO", ", ".join(f"\\fB{escape(p.split('(')[0])}\\fR({p.split('(')[1]}" for p in SEE_ALSO),
            ".PP", "The OpenZFS documentation: \\%https://openzfs.github.io/openzfs\\-docs/"]
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m advisor.cli.manpage", description=__doc__.splitlines()[0])
    parser.add_argument("--date", type=dt.date.fromisoformat, default=dt.date.today(),
                        help="the date in the page's footer (the build passes the changelog's, for a reproducible page)")
    args = parser.parse_args(argv)
    sys.stdout.write(render(args.date))
    return 0


if __name__ == "__main__":
    sys.exit(main())
