"""report.json as types: the fields verify judges, read once from a schema-valid document.

The report travels as JSON (written by report/build.py, signed, read back by verify); code that
judges it should not index strings into it in twenty places. `Report.from_json` is the one
boundary: it reads a document that passed the report schema (every release's schema requires the
same fields; tests/unit/test_report_view.py holds each field's name and type to
schemas/report.schema.json) into frozen dataclasses. What stays JSON says so: the embedded manifest
(its own schema), a check's metrics and params, a waiver (an open object the schema leaves
unchecked: verify judges its fields), the run's own records that evidence's rules judge as
recorded (cluster, sections, preflight, the environment's device records), and `document`, the
parsed report (or check entry) itself, which the helpers that judge the JSON as it was signed
(trust facts, the run's selection, a check's record) still take.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# the `suite` fields that bind the data a release publishes (catalog/releases.REPORT_DIGEST_FIELDS)
_DIGESTS = ("checklist_sha256", "tiers_sha256", "report_schema_sha256", "waivers_sha256")


@dataclass(frozen=True)
class Suite:
    """Which release of the suite ran, and the digests of the data files it ran with."""

    name: str
    version: str
    checklist_sha256: str
    tiers_sha256: str
    waivers_sha256: str | None = None
    report_schema_sha256: str | None = None

    def digest(self, field: str) -> str | None:
        """One of the data digests by its report field name (None: the report does not record it)."""
        if field not in _DIGESTS:
            raise KeyError(field)
        value: str | None = getattr(self, field)
        return value


@dataclass(frozen=True)
class Environment:
    """What the run ran on, as the run recorded it (`devices` is the cross-checked facts' JSON)."""

    ray: str
    torch: str | None
    python: str
    os: str
    cpu: str
    devices: Mapping[str, Any]
    # the environment as JSON: the rules of one cluster's nodes (evidence's nodes, identity,
    # coverage, host load) judge its device and host records as signed
    document: Mapping[str, Any]
    hostname: str | None = None


@dataclass(frozen=True)
class Selection:
    """What the run selected: the recorded pytest arguments and what they left out. The records
    below are JSON for the rules that judge them (evidence's size knob, the shards line, node
    sampling); None where the run recorded none, or a release's schema let through a non-object."""

    args: tuple[str, ...]
    deselected: tuple[str, ...]
    not_run: tuple[str, ...]
    collect_only: bool
    whole_checklist_collected: bool | None = None
    environment: Mapping[str, object] | None = None  # the environment variables that shape a run, those set
    nodes: Mapping[str, Any] | None = None           # which nodes the per-node checks covered (run --nodes)
    # A report `merge` made lists its shards (selection.shards, any non-empty value: a release
    # before merging does not type the field). Not a schema property: the shards themselves stay
    # JSON for the `shards` line (signing/shards.py), which judges them as signed.
    merged: bool = False


@dataclass(frozen=True)
class CheckResult:
    """One check's entry: its outcome and what the run recorded for it."""

    id: str
    title: str
    area: str
    level: str
    outcome: str
    reason: str | None
    duration_s: float
    metrics: Mapping[str, Any]
    params: Mapping[str, Any]
    waiver: Mapping[str, Any] | None
    tests: tuple[str, ...] | None
    document: Mapping[str, Any]  # the entry as JSON: compute_tiers and the judges read it so

    @property
    def waived(self) -> bool:
        return self.outcome == "waived"


@dataclass(frozen=True)
class Blocking:
    id: str
    outcome: str


@dataclass(frozen=True)
class Condition:
    kind: str
    met: bool
    detail: str


@dataclass(frozen=True)
class TierDetail:
    """One rung of the ladder as the report (or compute_tiers) states it."""

    name: str
    achieved: bool
    blocking: tuple[Blocking, ...]
    conditions: tuple[Condition, ...]
    required_checks: tuple[str, ...] | None = None
    below: str | None = None

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> TierDetail:
        required = doc.get("required_checks")
        return cls(name=doc["name"], achieved=doc["achieved"],
                   blocking=tuple(Blocking(b["id"], b["outcome"]) for b in doc["blocking"]),
                   conditions=tuple(Condition(c["kind"], c["met"], c["detail"]) for c in doc["conditions"]),
                   required_checks=None if required is None else tuple(required), below=doc.get("below"))


@dataclass(frozen=True)
class Capability:
    """One capability profile's entry (tiers/capabilities.yaml) as the report claims it; verify
    recomputes the whole list (catalog/capabilities.verify_claim) and compares."""

    name: str
    state: str
    declared: bool
    required_checks: tuple[str, ...]
    blocking: tuple[Blocking, ...]

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Capability:
        return cls(name=doc["name"], state=doc["state"], declared=doc["declared"],
                   required_checks=tuple(doc["required_checks"]),
                   blocking=tuple(Blocking(b["id"], b["outcome"]) for b in doc["blocking"]))


@dataclass(frozen=True)
class Report:
    """A schema-valid report.json, typed where verify reads it."""

    suite: Suite
    manifest: Mapping[str, Any]
    manifest_sha256: str
    environment: Environment
    started_at: str
    finished_at: str
    interrupted: bool
    selection: Selection
    checks: tuple[CheckResult, ...]
    tier: str | None
    tiers: tuple[TierDetail, ...]
    summary: Mapping[str, int]
    capabilities: tuple[Capability, ...] | None   # None: a report written before capability profiles
    partial: bool
    duration_s: float | None
    # the run's own records, JSON for the rules that judge them (coverage, stretch, host verdicts):
    cluster: Mapping[str, Any]
    sections: Mapping[str, Any] | None      # None: none recorded (or not an object, see _object)
    preflight: Mapping[str, Any] | None
    document: Mapping[str, Any]  # report.json as parsed: for the helpers that judge the JSON as signed

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Report:
        """The typed view of `doc`, which must have passed the report schema (KeyError otherwise)."""
        suite, env, sel, caps = doc["suite"], doc["environment"], doc["selection"], doc.get("capabilities")
        return cls(
            suite=Suite(name=suite["name"], version=suite["version"], checklist_sha256=suite["checklist_sha256"],
                        tiers_sha256=suite["tiers_sha256"], waivers_sha256=suite.get("waivers_sha256"),
                        report_schema_sha256=suite.get("report_schema_sha256")),
            manifest=doc["manifest"], manifest_sha256=doc["manifest_sha256"],
            environment=Environment(ray=env["ray"], torch=env["torch"], python=env["python"], os=env["os"],
                                    cpu=env["cpu"], devices=env["devices"], hostname=env.get("hostname"), document=env),
            started_at=doc["started_at"], finished_at=doc["finished_at"], interrupted=doc["interrupted"],
            selection=_selection(sel), checks=tuple(_check(c) for c in doc["checks"]), tier=doc["tier"],
            tiers=tuple(TierDetail.from_json(t) for t in doc["tiers"]), summary=doc["summary"],
            capabilities=_capabilities(caps), partial=doc["partial"], duration_s=doc.get("duration_s"),
            cluster=doc["cluster"], sections=_object(doc.get("sections")), preflight=_object(doc.get("preflight")),
            document=doc)

    def waived(self) -> list[CheckResult]:
        return [c for c in self.checks if c.waived]


def _object(value: object) -> Mapping[str, Any] | None:
    """An optional record the readers judge as JSON: None when absent or not an object (an older
    release's schema may not declare it, so any value passed; its readers took such a value for
    an empty record, and their `or {}` still does)."""
    return value if isinstance(value, Mapping) else None


def _selection(sel: Mapping[str, Any]) -> Selection:
    return Selection(args=tuple(sel["args"]), deselected=tuple(sel["deselected"]), not_run=tuple(sel["not_run"]),
                     collect_only=sel["collect_only"], whole_checklist_collected=sel.get("whole_checklist_collected"),
                     environment=_object(sel.get("environment")), nodes=_object(sel.get("nodes")),
                     merged=bool(sel.get("shards")))


def _capabilities(caps: Any) -> tuple[Capability, ...] | None:
    """The claimed capabilities, typed; None when the report claims none, or claims them in a form
    the view cannot read: a release whose report schema predates declaring `capabilities` let any
    value through, and verify's capabilities line judges that JSON itself (document)."""
    if caps is None:
        return None
    try:
        return tuple(Capability.from_json(c) for c in caps)
    except (KeyError, TypeError, AttributeError):
        return None


def _check(doc: Mapping[str, Any]) -> CheckResult:
    tests = doc.get("tests")
    return CheckResult(id=doc["id"], title=doc["title"], area=doc["area"], level=doc["level"], outcome=doc["outcome"],
                       reason=doc["reason"], duration_s=doc["duration_s"], metrics=doc["metrics"], params=doc["params"],
                       waiver=doc.get("waiver"), tests=None if tests is None else tuple(tests), document=doc)
