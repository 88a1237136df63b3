"""Typed keys for everything the app factory (advisor.service.app) puts on the aiohttp Application."""
from __future__ import annotations

from aiohttp import web

from advisor.answering.answerer import Answerer
from advisor.api.runtime import Runtime
from advisor.changes.tracker import ChangeTracker
from advisor.config.settings import Settings
from advisor.config.webconfig import WebConfig
from advisor.engine.answer_cache import AnswerCache
from advisor.engine.loader import RuleBook
from advisor.exporters.collector import MetricsRenderer
from advisor.fleet.reader import FleetReader
from advisor.host.facts_provider import FactsProvider
from advisor.model.provider import ModelProvider
from advisor.recognise.window import Recogniser
from advisor.server.bodies import Bodies
from advisor.server.limits import WorkLimiter
from advisor.server.passwords import PasswordChecks

SETTINGS = web.AppKey("settings", Settings)
FACTS = web.AppKey("facts", FactsProvider)
RULEBOOK = web.AppKey("rulebook", RuleBook)
MODEL = web.AppKey("model", ModelProvider)  # the regression model (advisor/model/)
# the one way into the answer: the store's evidence and reports, the model (advisor/answering/)
ANSWERER = web.AppKey("answerer", Answerer)
EXPORTER = web.AppKey("exporter", MetricsRenderer)
RUNTIME = web.AppKey("runtime", Runtime)  # what SIGHUP replaces: export options, the workloads' advice
WEB_CONFIG = web.AppKey("web_config", WebConfig)  # TLS and basic auth (--web.config.file)
PASSWORDS = web.AppKey("passwords", PasswordChecks)  # basic auth's bcrypt checks: own thread, cache, limit
ANSWERS = web.AppKey("answers", AnswerCache)  # /recommend answers kept while what they read is unchanged
BODIES = web.AppKey("bodies", Bodies)  # /metrics and /v1/facts bodies, built once per collection
LIMITER = web.AppKey("limiter", WorkLimiter)  # bounds the heavy requests in work at once
CHANGES = web.AppKey("changes", ChangeTracker)  # tracked settings that changed, and their verdicts (docs/changes.md)
OPENAPI_JSON = web.AppKey("openapi_json", bytes)  # GET /openapi.json's body: constant per app, built once
FLEET = web.AppKey("fleet", FleetReader)  # sibling pools' probes from Prometheus, when [fleet] is on (docs/fleet.md)
RECOGNISER = web.AppKey("recogniser", Recogniser)  # the workload each dataset's I/O looks like (docs/recognition.md)
