"""JSON at the boundary, named: the types of parsed report, manifest and data documents.

A document the suite reads (report.json, a manifest, a data file under tiers/) is JSON until a
schema has passed it and a typed view (conformance/report/view.py, catalog/manifest.Manifest,
catalog/data.py's parsers) has read it. These aliases say which of two things a value is:

  JsonObject  a JSON object whose shape a schema holds (values read by key as that schema says;
              mypy cannot see a JSON Schema, so the values stay unchecked here, and the schema
              test of each typed view holds the names)
  Untrusted   a value from a signed document verify must not believe: every reader narrows it with
              isinstance (a hostile value of the wrong type is "absent" or a contradiction)
"""
from __future__ import annotations

from typing import Any, Mapping, TypeAlias

JsonObject: TypeAlias = Mapping[str, Any]
Untrusted: TypeAlias = object
