"""Typed keys for what the app factory puts on the aiohttp Application."""
from __future__ import annotations

from aiohttp import web

from advisor.host.provider import FactsProvider
from advisor.settings import Settings

SETTINGS = web.AppKey("settings", Settings)
FACTS = web.AppKey("facts", FactsProvider)
