"""An HTTP answer checked against the OpenAPI document: its operation documents its status, its
content type, and its body matches that status's schema (jsonschema's OpenAPI 3.1 dialect)."""
from __future__ import annotations

import json
import re
from typing import Any

from openapi_schema_validator import OAS31Validator


def operation_path(doc: dict[str, Any], path: str) -> str | None:
    """The document's path template that `path` (no query) falls under: a literal path first."""
    if path in doc["paths"]:
        return path
    for template in doc["paths"]:
        pattern = "^" + re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)) + "$"
        if re.match(pattern, path):
            return template
    return None


def mismatches(doc: dict[str, Any], method: str, path: str, status: int, content_type: str, body: bytes) -> list[str]:
    """What in the answer the document does not describe; empty when it describes it all."""
    template = operation_path(doc, path)
    operation = doc["paths"].get(template, {}).get(method.lower()) if template else None
    if operation is None:
        return [f"{method} {path}: no operation in the document"]
    response = operation["responses"].get(str(status))
    if response is None:
        return [f"{method} {template}: status {status} is not documented ({sorted(operation['responses'])})"]
    media = content_type.split(";")[0].strip().lower()
    documented = response.get("content", {})
    if media not in documented:
        return [f"{method} {template} {status}: content type {media!r} is not documented ({sorted(documented)})"]
    value: Any = json.loads(body) if media.endswith("json") else body.decode()
    schema = {**documented[media]["schema"], "components": doc["components"]}
    validator = OAS31Validator(schema, format_checker=OAS31Validator.FORMAT_CHECKER)
    return [f"{method} {path} {status}: {'/'.join(map(str, e.absolute_path)) or 'body'}: {e.message[:300]}"
            for e in validator.iter_errors(value)][:5]
