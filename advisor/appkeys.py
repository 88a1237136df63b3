"""Typed keys for everything the app factory (advisor.app) puts on the aiohttp Application."""
from __future__ import annotations

from aiohttp import web

from advisor.api.shared import Bodies, WorkLimiter
from advisor.engine.advice import Advice
from advisor.engine.loader import RuleBook
from advisor.exporters.base import ExportOptions
from advisor.exporters.collector import FactsCollector
from advisor.host.provider import FactsProvider
from advisor.model.provider import ModelProvider
from advisor.settings import Settings
from advisor.webconfig import WebConfig

SETTINGS = web.AppKey("settings", Settings)
FACTS = web.AppKey("facts", FactsProvider)
RULEBOOK = web.AppKey("rulebook", RuleBook)
ADVICE = web.AppKey("advice", Advice)  # what /metrics exports for the `workloads` setting
MODEL = web.AppKey("model", ModelProvider)  # the regression model (advisor/model/)
EXPORTER = web.AppKey("exporter", FactsCollector)
EXPORT_OPTIONS = web.AppKey("export_options", ExportOptions)
WEB_CONFIG = web.AppKey("web_config", WebConfig)  # TLS and basic auth (--web.config.file)
BODIES = web.AppKey("bodies", Bodies)  # /metrics and /v1/facts bodies, built once per collection
LIMITER = web.AppKey("limiter", WorkLimiter)  # bounds the heavy requests in work at once
