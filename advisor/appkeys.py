"""Typed keys for everything the app factory (advisor.app) puts on the aiohttp Application."""
from __future__ import annotations

from aiohttp import web

from advisor.engine.advice import Advice
from advisor.engine.loader import RuleBook
from advisor.exporters.base import ExportOptions
from advisor.exporters.collector import FactsCollector
from advisor.host.provider import FactsProvider
from advisor.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
FACTS = web.AppKey("facts", FactsProvider)
RULEBOOK = web.AppKey("rulebook", RuleBook)
ADVICE = web.AppKey("advice", Advice)  # what /metrics exports for the `workloads` setting
EXPORTER = web.AppKey("exporter", FactsCollector)
EXPORT_OPTIONS = web.AppKey("export_options", ExportOptions)
