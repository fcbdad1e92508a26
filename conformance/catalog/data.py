"""The suite's data as types: the vocabulary, the checklist, the tier ladder, the waivers, and
the other data files (capability profiles, soak record, run knobs), each loaded and validated.

The data lives in files (the repository's top-level `tiers/` and `schemas/`, shipped inside the package as the
data packages `conformance.catalog.tiers` and `.schemas`) so that reviewers read and diff requirements, not code,
and so that an installed wheel carries them: they are found with `importlib.resources`, never relative to a source
checkout (catalog/datafiles.py: the data root, the strict reader and schema validation). Everything here validates against its JSON Schema before use.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from conformance.catalog import datafiles, declared_waits, scenario_bounds
from conformance.catalog.clusters import NO_CLUSTER, cluster_required
from conformance.catalog.release_knobs import LEGACY_KNOBS, ReleaseKnobs, parse_release_knobs
from conformance.catalog.soak import Soak, soak_problems
from conformance.errors import UserError


def checklist_path() -> Path:
    return datafiles.data_root() / "tiers" / "checklist.yaml"


def tiers_path() -> Path:
    return datafiles.data_root() / "tiers" / "tiers.yaml"


def waivers_path() -> Path:
    return datafiles.data_root() / "tiers" / "waivers.yaml"


def vocabulary_path() -> Path:
    return datafiles.data_root() / "tiers" / "vocabulary.yaml"


@dataclass(frozen=True)
class Vocabulary:
    """Areas (with their id prefixes), levels and tags: the words every other data file uses."""

    levels: tuple[str, ...]
    area_prefix: dict[str, str] = field(hash=False, compare=False)
    tags: frozenset[str] = frozenset()
    # Levels whose checks are findings, never counted (`uncounted_levels:`): no tier, share or
    # capability profile selects them, whatever its selector says.
    uncounted: frozenset[str] = frozenset()

    def check_item(self, where: str, *, id: str, area: str, level: str, tags: tuple[str, ...] = ()) -> None:
        """Raise a one-line UserError for an unknown area/level/tag or an id outside its area's prefix."""
        if area not in self.area_prefix:
            raise UserError(f"{where}.area: unknown area {area!r}; expected one of {', '.join(self.area_prefix)}")
        if level not in self.levels:
            raise UserError(f"{where}.level: unknown level {level!r}; expected one of {', '.join(self.levels)}")
        prefix = self.area_prefix[area]
        if not id.startswith(prefix + "-"):
            raise UserError(f"{where}.id: {id} is in area {area}, whose ids start with {prefix}-")
        for tag in tags:
            self.check_tag(f"{where}.tags", tag)

    def check_id(self, where: str, cid: str) -> None:
        """Raise a one-line UserError for a check id whose prefix is no area's."""
        if cid.split("-")[0] not in self.area_prefix.values():
            raise UserError(f"{where}: {cid} has no area's prefix; expected one of "
                            f"{', '.join(p + '-' for p in self.area_prefix.values())} (tiers/vocabulary.yaml)")

    def check_tag(self, where: str, tag: str) -> None:
        if tag not in self.tags:
            raise UserError(f"{where}: unknown tag {tag!r} (tags are declared in tiers/vocabulary.yaml)")


def parse_vocabulary(raw: object) -> Vocabulary:
    doc = datafiles.validated_object(raw, "vocabulary", what="vocabulary")
    prefixes = [a["prefix"] for a in doc["areas"].values()]
    if len(set(prefixes)) != len(prefixes):
        raise UserError("vocabulary: areas: two areas share an id prefix")
    for level in doc.get("uncounted_levels", []):
        if level not in doc["levels"]:
            raise UserError(f"vocabulary: uncounted_levels: unknown level {level!r}; expected one of "
                            f"{', '.join(doc['levels'])}")
    return Vocabulary(levels=tuple(doc["levels"]), area_prefix={k: v["prefix"] for k, v in doc["areas"].items()},
                      tags=frozenset(doc["tags"]), uncounted=frozenset(doc.get("uncounted_levels", [])))


def load_vocabulary(path: Path | None = None) -> Vocabulary:
    return parse_vocabulary(datafiles.read_yaml_or_json(path or vocabulary_path(), what="vocabulary"))


@dataclass(frozen=True)
class Figure:
    """One figure of merit `ray-conformance diff` gates (a check's `merit.figures` entry): a path
    into the check's metrics ('*' for every key or item), the better direction, and the path of
    the per-trial values of the plugin's own measurement behind it (None: a list-valued figure is
    its own trials, a number one trial per run)."""

    metric: str
    better: str                        # higher | lower
    trials: str | None = None
    trials_better: str | None = None
    reference: str | None = None       # the same-run reference's per-trial values (a fraction's denominator)
    floor: float = 0.0                 # a change smaller than this (the figure's unit) never regresses
    # what normalises it (`normalised_by:`): "reference" (a fraction of the same-run `reference`),
    # "host" (no same-run reference of the same work: the pair's host change may explain a move),
    # "itself" (the host's speed does not set it: a memory growth)
    normalised_by: str = "itself"
    # the least relative worsening gated for this figure, whatever the gate's own tolerance: the
    # honest run-to-run move of a figure measured on the reference host (None: the gate's alone)
    tolerance: float | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Figure":
        trials = d.get("trials") or {}
        return cls(metric=d["metric"], better=d["better"], trials=trials.get("metric"),
                   trials_better=trials.get("better"), reference=(d.get("reference") or {}).get("metric"),
                   floor=float(d.get("floor", 0)), tolerance=float(d["tolerance"]) if d.get("tolerance") is not None else None,
                   # releases before normalised_by (0.1.0+data.19 and older) read as what they gated
                   normalised_by=d.get("normalised_by", "reference" if d.get("reference") else "itself"))


@dataclass(frozen=True)
class Merit:
    """What diff gates for a check (`merit:`): its figures, and the references they were measured
    against (reported when they moved, as the host's, never gated)."""

    figures: tuple[Figure, ...]
    references: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "Merit | None":
        if not d:
            return None
        return cls(figures=tuple(Figure.from_dict(f) for f in d["figures"]),
                   references=tuple(d.get("references", ())))


@dataclass(frozen=True)
class Check:
    """One checklist item."""

    id: str
    title: str
    area: str
    level: str
    requirement: str
    rationale: str
    since: str
    tags: tuple[str, ...] = ()
    timeout_s: float | None = None
    retired: bool = False
    # A new check soaking before it counts (`provisional: true`): run and reported like any
    # check, counted toward nothing (a tier, a SHOULD share, a profile) until a release promotes
    # it after its soak record (tiers/soak.yaml, conformance.catalog.soak) holds enough green runs.
    provisional: bool = False
    # Thresholds and knobs of this check (`params:` in the checklist): the only place check
    # code and judges read a pass/fail number from.
    params: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # The names among `params` that come from the area's shared block (`area_params:`).
    shared: tuple[str, ...] = field(default=(), hash=False, compare=False)
    # What `ray-conformance diff` gates (`merit:`): None for a check with no figure of merit.
    merit: Merit | None = field(default=None, hash=False, compare=False)
    # Its judge (`judge:`, a function of its area's judges module: conformance.report.judges), or why its outcome
    # cannot be recomputed from evidence (`unjudged:`); a release declares one.
    judge: str | None = field(default=None, hash=False, compare=False)
    unjudged: str | None = field(default=None, hash=False, compare=False)
    # The cluster shape its test runs on (`cluster:`), or NO_CLUSTER (conformance.catalog.clusters),
    # a timed scenario's steps (`scenario_bound:`), whose time each wait is (`waits:`); None: a release before the field.
    cluster: str | None = field(default=None, hash=False, compare=False)
    scenario: tuple[scenario_bounds.Step, ...] | None = field(default=None, hash=False, compare=False)
    waits: declared_waits.DeclaredWaits | None = field(default=None, hash=False, compare=False)

    @classmethod
    def from_dict(cls, d: dict[str, Any], area_block: Mapping[str, Any] | None = None) -> "Check":
        """One entry; `area_block` is its area's shared params, of which it names the ones it uses
        (`area_params: [...]`): they join its own `params`."""
        shared = tuple(d.get("area_params", ()))
        block = area_block or {}
        own = dict(d.get("params", {}))
        for name in shared:
            if name not in block:
                raise UserError(f"checklist: {d['id']}.area_params: {name} is not in area_params.{d['area']} "
                                f"(expected one of: {', '.join(block) or 'none declared'})")
        for name in own:
            if name in block:
                raise UserError(f"checklist: {d['id']}.params.{name}: area {d['area']} declares it once in "
                                f"area_params.{d['area']}; name it in {d['id']}.area_params instead")
        fields = {k: v for k, v in d.items() if k not in ("area_params", "scenario_bound", "waits")}
        params = {**{n: block[n] for n in shared}, **own}
        cid, merit, tags = d["id"], Merit.from_dict(d.get("merit")), tuple(d.get("tags", ()))
        return cls(**{**fields, "tags": tags, "shared": shared, "merit": merit, "params": params,
                      "scenario": scenario_bounds.parse(cid, d.get("scenario_bound"), params), "waits": declared_waits.parse(cid, d.get("waits"), params)})

    def shape(self) -> str | None:
        """The cluster shape its test runs on (None: no cluster of the run, or a release before the field)."""
        return None if self.cluster in (None, NO_CLUSTER) else self.cluster

    def param(self, name: str) -> Any:
        """One threshold of this check; a missing one is a data error, never a silent default."""
        try:
            return self.params[name]
        except KeyError:
            raise UserError(f"checklist: {self.id}.params.{name}: missing (the check needs it)") from None


@dataclass(frozen=True)
class Checklist:
    checks: tuple[Check, ...]
    sha256: str
    # area -> its shared params (`area_params:`), each named by the checks that use it.
    area_params: dict[str, dict[str, Any]] = field(default_factory=dict, hash=False, compare=False)
    # The vocabulary's uncounted levels (INFO): their checks are findings, never counted.
    uncounted_levels: frozenset[str] = field(default=frozenset(), hash=False, compare=False)
    # paths into a report (`host_references:`) of what a run measured of the host beside the checks'
    # own references (Ray's machinery record): diff's "the host differed" reads them too
    host_references: tuple[str, ...] = field(default=(), hash=False, compare=False)

    def by_id(self) -> dict[str, Check]:
        return {c.id: c for c in self.checks}

    def active(self) -> tuple[Check, ...]:
        return tuple(c for c in self.checks if not c.retired)

    def counted(self) -> tuple[Check, ...]:
        """Active checks a tier, a SHOULD share or a capability profile may count: not findings,
        not provisional checks."""
        return tuple(c for c in self.active() if c.level not in self.uncounted_levels and not c.provisional)

    def provisional(self) -> tuple[Check, ...]:
        """Active checks still soaking: recorded and shown, never counted (until promoted)."""
        return tuple(c for c in self.active() if c.provisional)

    def findings(self) -> tuple[Check, ...]:
        """Active checks of an uncounted level: recorded and shown, never counted."""
        return tuple(c for c in self.active() if c.level in self.uncounted_levels)


def parse_checklist(raw: object, sha256: str = "", vocabulary: Vocabulary | None = None) -> Checklist:
    doc = datafiles.validated_object(raw, "checklist", what="checklist")
    vocabulary = vocabulary or load_vocabulary()
    blocks: dict[str, dict[str, Any]] = doc.get("area_params") or {}
    for area in blocks:
        if area not in vocabulary.area_prefix:
            raise UserError(f"checklist: area_params.{area}: unknown area; expected one of "
                            f"{', '.join(vocabulary.area_prefix)}")
    checks = scenario_bounds.before_the_field(tuple(Check.from_dict(c, blocks.get(c["area"])) for c in doc["checks"]),
                                              lambda: load_checklist().checks)
    for area, block in blocks.items():
        used = {n for c in checks if c.area == area and not c.retired for n in c.shared}
        for name in block:
            if name not in used:
                raise UserError(f"checklist: area_params.{area}.{name}: no active {area} check names it in its "
                                "area_params (drop it, or name it where it is used)")
    if any(c.cluster is not None for c in checks):   # a release from before the field names none
        cluster_required(checks)
    seen: set[str] = set()
    for c in checks:
        if c.id in seen:
            raise UserError(f"checklist: checks: duplicate id {c.id}")
        seen.add(c.id)
        vocabulary.check_item(f"checklist: {c.id}", id=c.id, area=c.area, level=c.level, tags=c.tags)
        for f in c.merit.figures if c.merit else ():
            for name, path in (("trials", f.trials), ("reference", f.reference)):
                if path and path.count("*") != f.metric.count("*"):
                    raise UserError(f"checklist: {c.id}.merit.figures: {name} {path!r} must have as many '*' as "
                                    f"metric {f.metric!r} (each binds the same key)")
            if (f.normalised_by == "reference") != bool(f.reference):
                raise UserError(f"checklist: {c.id}.merit.figures: {f.metric}: normalised_by 'reference' goes with a "
                                "reference (and a reference with normalised_by 'reference')")
            if f.reference and not (f.trials and f.better == "higher"):
                raise UserError(f"checklist: {c.id}.merit.figures: {f.metric}: a reference needs trials and a figure "
                                "that is higher-is-better (a fraction of the reference, or a speedup over it)")
            if not math.isfinite(f.floor):
                raise UserError(f"checklist: {c.id}.merit.figures: floor {f.floor!r}, expected a finite number")
        for name, value in c.params.items():  # YAML's .nan/.inf pass JSON Schema's number bounds
            if isinstance(value, float) and not math.isfinite(value):
                raise UserError(f"checklist: {c.id}.params.{name}: {value!r}, expected a finite number")
    return Checklist(checks=checks, sha256=sha256, area_params={a: dict(b) for a, b in blocks.items()},
                     uncounted_levels=vocabulary.uncounted, host_references=tuple(doc.get("host_references", ())))


def load_checklist(path: Path | None = None) -> Checklist:
    path = path or checklist_path()
    return parse_checklist(datafiles.read_yaml_or_json(path, what="checklist"), datafiles.sha256_file(path))


@dataclass(frozen=True)
class Ladder:
    tiers: tuple[dict[str, Any], ...]
    sha256: str
    # What checks need from the hardware's shape (tiers.yaml `shape_policy`; empty: nothing).
    shape_policy: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    # How often a failed test runs again in the same run (tiers.yaml `flakes.retries`; a release
    # without the block re-runs nothing).
    retries: int = 0
    # What merge and verify judge shards and node samples by (tiers.yaml `shards`, `nodes`; release_knobs).
    knobs: ReleaseKnobs = field(default=LEGACY_KNOBS, hash=False, compare=False)

    def names(self) -> list[str]:
        return [t["name"] for t in self.tiers]


def select_checks(checklist: Checklist, select: Mapping[str, Any], findings: bool = False) -> list[Check]:
    """Checks matching a tier's selector: every given criterion must match (tags: any of). Never a
    check of an uncounted level (INFO), a finding that counts toward nothing, whatever the selector
    says, unless `findings` (a selector that counts nothing: the manifest's gates).

    Here rather than in conformance.catalog.ladder, which imports this module: parse_ladder refuses a
    selector that matches nothing."""
    chosen = []
    for c in (checklist.active() if findings else checklist.counted()):
        if "areas" in select and c.area not in select["areas"]:
            continue
        if "levels" in select and c.level not in select["levels"]:
            continue
        if "tags" in select and not set(select["tags"]) & set(c.tags):
            continue
        if "ids" in select and c.id not in select["ids"]:
            continue
        chosen.append(c)
    return chosen


def parse_ladder(raw: object, sha256: str = "", checklist: Checklist | None = None) -> Ladder:
    doc = datafiles.validated_object(raw, "tiers", what="tiers")
    names = [t["name"] for t in doc["tiers"]]
    if len(set(names)) != len(names):
        raise UserError("tiers: tiers: duplicate tier name")
    vocabulary = load_vocabulary()
    for t in doc["tiers"]:
        for i, req in enumerate(t["requires"]):
            where = f"tiers: {t['name']}.requires[{i}].select"
            select = req["select"]
            for area in select.get("areas", []):
                if area not in vocabulary.area_prefix:
                    raise UserError(f"{where}.areas: unknown area {area!r}")
            for level in select.get("levels", []):
                if level not in vocabulary.levels:
                    raise UserError(f"{where}.levels: unknown level {level!r}")
                if level in vocabulary.uncounted:
                    raise UserError(f"{where}.levels: {level} is an uncounted level (findings, never counted "
                                    "toward a tier); expected a counted level")
            for tag in select.get("tags", []):
                vocabulary.check_tag(f"{where}.tags", tag)
            for cid in select.get("ids", []):
                vocabulary.check_id(f"{where}.ids", cid)
    if checklist is not None:
        known = set(checklist.by_id())
        for t in doc["tiers"]:
            for i, req in enumerate(t["requires"]):
                for cid in req["select"].get("ids", []):
                    if cid not in known:
                        raise UserError(f"tiers: {t['name']}.requires: unknown check id {cid}")
                if not select_checks(checklist, req["select"]):
                    raise UserError(f"tiers: {t['name']}.requires[{i}].select: matches no active check "
                                    f"({req['select']}); a selector that selects nothing makes a tier easier")
    for need in doc.get("shape_policy", {}).get("needs", []):
        for cid in need["ids"]:
            vocabulary.check_id("tiers: shape_policy.needs", cid)
            if checklist is not None and cid not in checklist.by_id():
                raise UserError(f"tiers: shape_policy.needs: unknown check id {cid}")
    return Ladder(tiers=tuple(doc["tiers"]), sha256=sha256, shape_policy=dict(doc.get("shape_policy", {})),
                  retries=int((doc.get("flakes") or {}).get("retries", 0)),
                  knobs=parse_release_knobs(doc, vocabulary, set(checklist.by_id()) if checklist else None))


def load_ladder(path: Path | None = None, checklist: Checklist | None = None) -> Ladder:
    path = path or tiers_path()
    return parse_ladder(datafiles.read_yaml_or_json(path, what="tiers"), datafiles.sha256_file(path), checklist)


@dataclass(frozen=True)
class Waiver:
    check: str
    issue: str
    reason: str
    expires: str  # ISO date
    blocks_tier: bool = False
    transports: tuple[str, ...] = ()   # only runs of these transports (upper case); () every run


def waivers_for(waivers: Iterable[Waiver], transport: str | None) -> list[Waiver]:
    """The waivers that apply to a run of `transport` (the manifest's transport.name; None: no
    transport): every unscoped one, and a scoped one only for the transports it names. A limit of
    one of Ray's transports (NIXL's refusal of views) must never waive the same check for a
    vendor's transport, whose failure there is its own."""
    name = transport.upper() if transport else None
    return [w for w in waivers if not w.transports or (name is not None and name in w.transports)]


def load_waivers(path: Path | None = None) -> tuple[list[Waiver], str]:
    """Waivers file (optional); returns the waivers and the file's sha256 ('' when absent)."""
    path = path or waivers_path()
    if not Path(path).exists():
        return [], ""
    doc = datafiles.read_yaml_or_json(path, what="waivers")
    datafiles.validate(doc, "waivers", what="waivers")
    return [_waiver(w) for w in doc.get("waivers", [])], datafiles.sha256_file(path)


def _waiver(entry: Mapping[str, Any]) -> Waiver:
    """One schema-validated waiver entry; YAML reads an unquoted `expires` as a date, kept as text."""
    fields: dict[str, Any] = {k: str(v) if k == "expires" else tuple(v) if k == "transports" else v
                              for k, v in entry.items()}
    return Waiver(**fields)


@dataclass
class SuiteData:
    """Everything the suite reads from its data files, loaded and cross-validated once."""

    checklist: Checklist
    ladder: Ladder
    waivers: list[Waiver] = field(default_factory=list)
    waivers_sha256: str = ""


def capabilities_path() -> Path:
    """tiers/capabilities.yaml; the packaged one when an override folder (CONFORMANCE_DATA_DIR)
    does not carry its own (as run.yaml)."""
    path = datafiles.data_root() / "tiers" / "capabilities.yaml"
    return path if path.exists() else datafiles.packaged_data_root() / "tiers" / "capabilities.yaml"


def load_profiles(path: Path | None = None) -> list[dict[str, Any]]:
    """The capability profiles (conformance.catalog.capabilities computes them)."""
    doc = datafiles.read_yaml_or_json(path or capabilities_path(), what="capabilities")
    datafiles.validate(doc, "capabilities", what="capabilities")
    return list(doc["capabilities"])


def unselected_checks(checklist: Checklist, ladder: Ladder, profiles: Iterable[Mapping[str, Any]]) -> list[str]:
    """Active checks that count toward nothing, each as the loader's one-line error: a MUST that no
    tier requires and no capability profile selects; a SHOULD likewise when no tier counts a share
    of the SHOULD checks either. Such a check would run, pass or fail, and change no verdict. Checks
    of an uncounted level (INFO) are findings: counting toward nothing is what they are."""
    selected = {c.id for t in ladder.tiers for req in t.get("requires", []) for c in select_checks(checklist, req["select"])}
    selected |= {c.id for p in profiles for req in p.get("requires", []) for c in select_checks(checklist, req["select"])}
    share = any(c.get("kind") == "should_share" for t in ladder.tiers for c in t.get("conditions", []))
    return [f"tiers: {c.id} ({c.level}): no tier or capability profile selects it, so it counts toward nothing; "
            "select it in tiers/tiers.yaml or tiers/capabilities.yaml"
            for c in checklist.counted() if c.id not in selected and not (c.level == "SHOULD" and share)]


def load_suite_data() -> SuiteData:
    checklist = load_checklist()
    cluster_required(checklist.checks)
    ladder = load_ladder(checklist=checklist)
    waivers, wsha = load_waivers()
    known = set(checklist.by_id())
    for w in waivers:
        if w.check not in known:
            raise UserError(f"waivers: {w.check}: unknown check id")
    unselected = unselected_checks(checklist, ladder, load_profiles())
    if unselected:
        raise UserError(unselected[0])
    soaking = soak_problems(checklist, load_soak())
    if soaking:
        raise UserError(soaking[0])
    return SuiteData(checklist, ladder, waivers, wsha)


def soak_path() -> Path:
    """tiers/soak.yaml (provisional checks' soak record); the packaged one when an override folder
    (CONFORMANCE_DATA_DIR) does not carry its own."""
    path = datafiles.data_root() / "tiers" / "soak.yaml"
    return path if path.exists() else datafiles.packaged_data_root() / "tiers" / "soak.yaml"


def parse_soak(raw: object) -> Soak:
    doc = datafiles.validated_object(raw, "soak", what="soak")
    return Soak.from_doc(doc)


def load_soak(path: Path | None = None) -> Soak:
    """The soak record of provisional checks (conformance.catalog.soak judges it)."""
    return parse_soak(datafiles.read_yaml_or_json(path or soak_path(), what="soak"))


def run_knobs_path() -> Path:
    """tiers/run.yaml (preflight limits, typical durations); the packaged one when an override
    folder (CONFORMANCE_DATA_DIR) does not carry its own."""
    path = datafiles.data_root() / "tiers" / "run.yaml"
    return path if path.exists() else datafiles.packaged_data_root() / "tiers" / "run.yaml"


@functools.lru_cache(maxsize=2)
def _run_knobs_at(path: str) -> dict[str, Any]:
    doc: dict[str, Any] = datafiles.read_yaml_or_json(Path(path), what="run knobs")   # an object (validated below)
    what = f"run knobs ({Path(path).name})"
    datafiles.validate(doc, "run", what=what)
    vocabulary = load_vocabulary()
    for cid in doc["durations"]["checks"]:
        vocabulary.check_id(f"{what}: durations.checks", cid)
    return doc


def load_run_knobs() -> dict[str, Any]:
    """The run's knobs that judge nothing (preflight limits, host warnings, call bounds, durations)."""
    return _run_knobs_at(str(run_knobs_path()))
