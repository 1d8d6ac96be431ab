"""The OpenLineage JSON schemas gatekeeper's run events must satisfy, and a small validator.

``tests/openlineage_spec/`` holds files copied verbatim from OpenLineage/OpenLineage (commit
8f02abfb7a25: spec/OpenLineage.json 2-0-2 and spec/facets/*.json of the facets in the events);
``docs/openlineage/GatekeeperRunFacet.json`` is gatekeeper's own facet. ``jsonschema`` is not a
dependency, so this validates the JSON Schema 2020-12 keywords those files use: ``$ref`` (local
and across files by ``$id``), ``allOf``, ``anyOf``, ``oneOf``, ``type``, ``properties``,
``required``, ``additionalProperties``, ``items``, ``enum``, ``minimum`` and the ``date-time``,
``uuid`` and ``uri`` formats. An unknown keyword that constrains is refused, never ignored.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
FILES = [
    *sorted((ROOT / "tests" / "openlineage_spec").glob("*.json")),
    ROOT / "docs" / "openlineage" / "GatekeeperRunFacet.json",
]
SCHEMAS: dict[str, Any] = {}
for _path in FILES:
    _doc = json.loads(_path.read_text())
    SCHEMAS[_doc["$id"]] = _doc
CORE = "https://openlineage.io/spec/2-0-2/OpenLineage.json"
#: facet name -> (schema $id, definition) of the facets gatekeeper emits
RUN_FACETS = {
    "nominalTime": (
        "https://openlineage.io/spec/facets/1-0-1/NominalTimeRunFacet.json",
        "NominalTimeRunFacet",
    ),
    "jobDependencies": (
        "https://openlineage.io/spec/facets/1-0-1/JobDependenciesRunFacet.json",
        "JobDependenciesRunFacet",
    ),
    "errorMessage": (
        "https://openlineage.io/spec/facets/1-0-1/ErrorMessageRunFacet.json",
        "ErrorMessageRunFacet",
    ),
    "gatekeeper": (
        "urn:gatekeeper:spec:facets:1-0-0:GatekeeperRunFacet.json",
        "GatekeeperRunFacet",
    ),
    "tags": ("https://openlineage.io/spec/facets/1-0-0/TagsRunFacet.json", "TagsRunFacet"),
}
JOB_FACETS = {
    "jobType": ("https://openlineage.io/spec/facets/2-0-4/JobTypeJobFacet.json", "JobTypeJobFacet")
}
FORMATS = {
    "date-time": re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)"),
    "uuid": re.compile(
        r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
        r"[0-9a-fA-F]{12}"
    ),
    "uri": re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+"),
}
TYPES = {"object": dict, "array": list, "string": str, "boolean": bool}
ANNOTATIONS = {"$schema", "$id", "$defs", "description", "example", "title", "default"}


def event_problems(event: Any) -> list[str]:
    """Every way ``event`` breaks the RunEvent schema or the schema of one of its facets
    (facets gatekeeper does not emit are held to the base facet schema only); [] when valid."""
    problems = check(event, {"$ref": f"{CORE}#/$defs/RunEvent"}, CORE, "$")
    for where, facets, known in (
        ("run", _facets(event, "run"), RUN_FACETS),
        ("job", _facets(event, "job"), JOB_FACETS),
    ):
        for name, facet in facets.items():
            if name in known:
                doc, definition = known[name]
                problems += check(
                    facet, {"$ref": f"{doc}#/$defs/{definition}"}, doc, f"$.{where}.facets.{name}"
                )
    return problems


def _facets(event: Any, part: str) -> dict[str, Any]:
    holder = event.get(part) if isinstance(event, dict) else None
    facets = holder.get("facets") if isinstance(holder, dict) else None
    return facets if isinstance(facets, dict) else {}


def check(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    """Problems of ``value`` against ``schema`` (found in the document ``doc``)."""
    if schema is True or schema == {}:
        return []
    unknown = set(schema) - ANNOTATIONS - set(KEYWORDS)
    if unknown:
        raise ValueError(f"{path}: schema keyword(s) {sorted(unknown)} not supported")
    problems: list[str] = []
    for keyword, rule in KEYWORDS.items():
        if keyword in schema:
            problems += rule(value, schema, doc, path)
    return problems


def _ref(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    target, _, pointer = schema["$ref"].partition("#")
    doc = target or doc
    node = SCHEMAS[doc]
    for part in filter(None, pointer.split("/")):
        node = node[part]
    return check(value, node, doc, path)


def _type(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    kinds = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
    for kind in kinds:
        if kind == "integer" and isinstance(value, int) and not isinstance(value, bool):
            return []
        if kind == "number" and isinstance(value, (int, float)) and not isinstance(value, bool):
            return []
        if kind == "null" and value is None:
            return []
        if (
            kind in TYPES
            and isinstance(value, TYPES[kind])
            and (kind == "boolean" or not isinstance(value, bool))
        ):
            return []
    return [f"{path}: {value!r} is not of type {kinds}"]


def _properties(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    return [
        p
        for name, sub in schema["properties"].items()
        if name in value
        for p in check(value[name], sub, doc, f"{path}.{name}")
    ]


def _additional(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    extra = [k for k in value if k not in schema.get("properties", {})]
    rule = schema["additionalProperties"]
    if rule is False:
        return [f"{path}: unexpected properties {extra}"] if extra else []
    return [p for k in extra for p in check(value[k], rule, doc, f"{path}.{k}")]


def _required(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    if not isinstance(value, dict):
        return []
    return [f"{path}: {name!r} is required" for name in schema["required"] if name not in value]


def _items(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    if not isinstance(value, list):
        return []
    return [
        p for i, item in enumerate(value) for p in check(item, schema["items"], doc, f"{path}[{i}]")
    ]


def _all_of(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    return [p for sub in schema["allOf"] for p in check(value, sub, doc, path)]


def _any_of(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    results = [check(value, sub, doc, path) for sub in schema["anyOf"]]
    return [] if any(not r for r in results) else [f"{path}: matches none of anyOf: {results}"]


def _one_of(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    matched = sum(not check(value, sub, doc, path) for sub in schema["oneOf"])
    return [] if matched == 1 else [f"{path}: matches {matched} of oneOf, not exactly one"]


def _enum(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    return [] if value in schema["enum"] else [f"{path}: {value!r} not in {schema['enum']}"]


def _minimum(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    if (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and (value < schema["minimum"])
    ):
        return [f"{path}: {value} is below {schema['minimum']}"]
    return []


def _format(value: Any, schema: Any, doc: str, path: str) -> list[str]:
    pattern = FORMATS[schema["format"]]
    if isinstance(value, str) and not pattern.fullmatch(value):
        return [f"{path}: {value!r} is not a {schema['format']}"]
    return []


KEYWORDS = {
    "$ref": _ref,
    "type": _type,
    "properties": _properties,
    "additionalProperties": _additional,
    "required": _required,
    "items": _items,
    "allOf": _all_of,
    "anyOf": _any_of,
    "oneOf": _one_of,
    "enum": _enum,
    "minimum": _minimum,
    "format": _format,
}
