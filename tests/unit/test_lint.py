"""The code passes `ruff check` with the rules of pyproject.toml's [tool.ruff.lint] (pyflakes,
bugbear, pyupgrade, simplify, import order, complexity; syntax errors) and `mypy` with its
[tool.mypy] (advisor/, the exporters through the advisor/exporters link): what either finds fails
the unit tier."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TREES = ["advisor", "exporters", "rules", "tests", "deploy"]


def test_ruff_finds_nothing():
    pytest.importorskip("ruff", reason="ruff is a test dependency (pip install -e '.[test]')")
    done = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", "--output-format", "concise",
                           *TREES], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing():
    pytest.importorskip("mypy", reason="mypy is a test dependency (pip install -e '.[test]')")
    # no cache: nothing written into the checkout, and a stale cache can never hide an error (about 11 s)
    done = subprocess.run([sys.executable, "-m", "mypy", "--cache-dir", os.devnull], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
