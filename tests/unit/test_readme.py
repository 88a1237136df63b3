"""The README's claims that a test can check: the try-it commands work as written (on the
recording they name, with this checkout's `zfs-advisor`), the set-up is the two commands CI runs,
the layout names every package of advisor/, and no dated timing diary is back in it (docs/lab.md,
"Test run times", keeps that)."""
from __future__ import annotations

import re
import shlex
import subprocess
import sys
import urllib.request

from support import REPO
from support.service import Service

README = (REPO / "README.md").read_text()


def _section(title: str) -> str:
    start = README.index(f"## {title}")
    end = README.find("\n## ", start + 3)
    return README[start:end if end > 0 else None]


def _sh_blocks(text: str) -> list[list[str]]:
    return [block.strip().splitlines() for block in re.findall(r"```sh\n(.*?)```", text, re.S)]


def _zfs_advisor(line: str) -> list[str]:
    """`.../bin/zfs-advisor ARGS &` -> ARGS, as a list."""
    argv = shlex.split(line.rstrip("& "))
    assert argv[0].endswith("/zfs-advisor"), line
    return argv[1:]


def test_the_try_it_commands_answer_as_the_readme_says(tmp_path):
    install, serve, curl = _sh_blocks(_section("Try it in a minute"))[0]
    assert "pip install" in install and serve.endswith("&") and curl.startswith("curl -s ")
    args = _zfs_advisor(serve)
    assert args[:2] == ["serve", "--root"] and (REPO / args[2]).is_dir()
    url = shlex.split(curl)[-1]
    assert url.startswith("127.0.0.1:21134/recommend?")
    with Service(REPO / args[2], tmp_path) as service:  # `serve --root` on a free port instead of 21134
        target = "http://" + url.replace(":21134", f":{service.port}", 1)
        with urllib.request.urlopen(target, timeout=60) as resp:
            body = resp.read().decode()
    assert resp.status == 200 and "recordsize" in body and "postgres" in body.lower()


def test_the_script_command_prints_a_script_bash_accepts(tmp_path):
    text = _section("Try it in a minute")
    found = re.search(r"`(/tmp/zfs-advisor/bin/zfs-advisor recommend [^`]*--format script)`", text.replace("\n", " "))
    assert found, "the try-it section names the script command"
    args = _zfs_advisor(found.group(1))
    done = subprocess.run([sys.executable, "-m", "advisor", *args], cwd=REPO, capture_output=True, text=True,
                          timeout=300, check=True)
    assert done.stdout.startswith("#!/bin/sh")
    (tmp_path / "changes.sh").write_text(done.stdout)
    subprocess.run(["bash", "-n", str(tmp_path / "changes.sh")], check=True)


def test_set_up_is_the_two_commands_ci_runs():
    blocks = _sh_blocks(_section("Set-up on a fresh Debian machine"))
    assert blocks == [["deploy/debian/build --install"], ["tests/run"]]
    assert "exec tests/run" in (REPO / ".ci" / "run").read_text()


def test_no_timing_diary_in_the_readme():
    """Dated run times belong in docs/lab.md; the README points there."""
    assert not re.search(r"\b\d{1,2},\d{3} s\b", README), re.findall(r".{40}\b\d{1,2},\d{3} s\b", README)[:3]
    assert "Test run times" in (REPO / "docs" / "lab.md").read_text()


def test_the_layout_names_every_package_of_advisor():
    layout = _section("Layout")
    listed = set(re.findall(r"^  (\w+)/", layout, re.M)) | set(re.findall(r"(\w+)/ -> \.\./", layout))
    assert listed == {p.name for p in (REPO / "advisor").iterdir() if (p / "__init__.py").is_file()}
