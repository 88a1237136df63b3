"""The response objects of the OpenAPI document (advisor/api/openapi.py): JSON answers by their
pydantic model, the pages' HTML, the exporter's text, and the errors every operation can answer.

Every 4xx and 5xx whose body is JSON references the one error document, ErrorResponse
(advisor/server/errors.py writes it). OpenAPI 3.1, "Responses Object":
https://spec.openapis.org/oas/v3.1.0#responses-object
"""
from __future__ import annotations

from typing import Any

from advisor.engine.models import ErrorResponse

REF = "#/components/schemas/{model}"
# the exporter's two formats (advisor/exporters/negotiation.py): Prometheus' text format 0.0.4 and
# OpenMetrics 1.0, chosen by the scrape's Accept header
METRICS_MEDIA_TYPES = ("text/plain", "application/openmetrics-text")

# What the middlewares may answer to any operation, before or around its handler: the auth
# middleware (advisor/api/auth.py), the work limiter and the password checks (503 with
# Retry-After) and the error middleware (500).
COMMON_ERRORS = {
    "401": "credentials needed: a user of the web config file's basic auth, or `Authorization: Bearer "
           "<api_token>`; WWW-Authenticate names the schemes (RFC 9110, section 11.6.1)",
    "403": "refused: a request from beyond loopback while no api_token is set, or one from loopback whose Host "
           "header does not name this host (`valid` lists the names it may use)",
    "500": "internal error; the service log has the details",
    "503": "busy: too many requests in work or password checks waiting; Retry-After says when to try again",
}


def model_ref(name: str) -> dict[str, str]:
    return {"$ref": REF.format(model=name)}


def json_answer(model: type, description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": model_ref(model.__name__)}}}


def error(description: str) -> dict[str, Any]:
    return json_answer(ErrorResponse, description)


def html(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"text/html": {"schema": {"type": "string"}}}}


def metrics_text(description: str) -> dict[str, Any]:
    return {"description": description,
            "content": {media: {"schema": {"type": "string"}} for media in METRICS_MEDIA_TYPES}}


def with_common_errors(paths: dict[str, Any]) -> dict[str, Any]:
    """`paths` with COMMON_ERRORS added to every operation; where an operation documents the same
    status already (a page's own HTML 503, the POST's 401), both are described, and the JSON
    error document is added beside the page's HTML."""
    for operations in paths.values():
        for operation in operations.values():
            responses = operation["responses"]
            for status, description in COMMON_ERRORS.items():
                own = responses.get(status)
                if own is None:
                    responses[status] = error(description)
                else:
                    responses[status] = {"description": f"{own['description']}; or {description}",
                                         "content": {**own["content"], **error(description)["content"]}}
    return paths
