"""Declarative tuning rules and workload profiles (YAML data, validated at load).

This directory is a package only so the data ships with the install;
`RULES_DIR` is where the loader finds it.
"""
from pathlib import Path

RULES_DIR = Path(__file__).resolve().parent
