"""Issue 30, attack classes 2, 3 and 4, closed as classes: a vendor owns its key, edits a REAL
run's report.json (the committed example, reports/example, a whole run of the simulated
accelerator under release 0.1.0+data.6) and re-signs it. Each edit fixes up what verify
recomputes anyway (summary, tier, per-tier detail, capabilities), so the one line the class is
about is the only thing that can refuse it; the unedited report, re-signed, verifies.

  class 2  facts compared loosely: a node counted twice, a per-node fact true on one node only,
           a device type or resource that contradicts the manifest, an embedded manifest no run of
           the release accepts, Python or torch outside the suite's support, cluster.mode used to
           switch the manifest's node count off
  class 3  evidence judged from a summary: implausible figures, a summary that contradicts its
           raw matrix, fewer rounds than the release's params, a pass beside metrics recording its
           failure (scenarios, survivors waiting), a reference dropped, tests of another area
  class 4  capabilities: a profile listed twice; the label vocabulary and the profiles are the
           release's files, not the verifier's
No Ray.
"""
from __future__ import annotations

import copy
import json
import shutil
from collections import Counter
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

import verifier_clock
from conformance.catalog import capabilities, data, datafiles, releases
from conformance.catalog.ladder import compute_tiers
from conformance.signing import attestation as att
from conformance.signing import dsse, keys, submission, trust
from conformance.signing.canonical import canonical_json
from conformance.signing.keyring import key_from_file
from conformance.signing.verify import Verification, effective_checks, verify_path
from signing_support import build_report, write_releases, write_report_dir

# A real run's report (the committed example of release 0.1.0+data.6, kept as it was): the attacks
# below edit it. Its release predates declared judges, so the SIG's policy of refusing a tier on
# the vendor's word (certificates.vendor_word, verify's tier line) would refuse it before any line
# these tests are about: they run with that policy off (the policy has its own tests).
EXAMPLE = Path(__file__).resolve().parents[1] / "support" / "real_run_data6"


@pytest.fixture(autouse=True)
def _vendor_word_accepted(monkeypatch: pytest.MonkeyPatch) -> None:
    from conformance.signing.verify import tier

    monkeypatch.setattr(tier, "refuses_vendor_word", lambda case: False)


@pytest.fixture(scope="module", autouse=True)
def _verified_when_received() -> Iterator[None]:
    """The verifier's clock the day the SIG received the run (its release, superseded since, is
    inside the SIG's window then: signing/release_window.py), not today's."""
    yield from verifier_clock.pinned(EXAMPLE / "report.json")
RELEASES = releases.default_path()


def real_report() -> dict[str, Any]:
    return json.loads((EXAMPLE / "report.json").read_text())


@pytest.fixture(scope="module")
def key(tmp_path_factory) -> keys.KeyPair:
    return keys.write_keypair(tmp_path_factory.mktemp("evidence-key") / "vendor")


def retally(report: dict[str, Any], releases_file: Path = RELEASES) -> dict[str, Any]:
    """What an editing vendor fixes up after an edit: summary, tier, per-tier detail and
    capabilities, recomputed the way verify recomputes them from the release's files."""
    release = releases.load_releases(releases_file)[report["suite"]["version"]]
    checklist, ladder = releases.load_release_data(release, releases_file)
    waivers = data.load_waivers(releases.release_file(release, "waivers_sha256", releases_file))[0]
    checks = effective_checks(report["checks"], waivers, None)
    labels = releases.release_file(release, "labels_sha256", releases_file)
    report["tier"], report["tiers"] = compute_tiers(checks, checklist, ladder,
                                                    trust.tier_context(report, trust.domain_keys_of(labels)))
    cap_file = releases.release_file(release, "capabilities_sha256", releases_file)
    if release.capabilities_sha256:
        profiles = capabilities.load_profiles(cap_file)
    else:   # the release predates binding its profiles: the verifier judges the claimed ones only
        claimed = {c.get("name") for c in report.get("capabilities") or []}
        profiles = [p for p in capabilities.load_profiles() if p["name"] in claimed]
    report["capabilities"] = capabilities.compute_capabilities(report["checks"], checklist, profiles, report["manifest"])
    counts = Counter(c["outcome"] for c in report["checks"])
    report["summary"] = {k: counts.get(k, 0) for k in report["summary"]}
    return report


def sign_as_vendor(folder: Path, report: dict[str, Any], private_key: Path, releases_file: Path = RELEASES) -> Path:
    """Write the run's three files with `report` and sign them for the report's own release
    (what `sign` writes for a report of that release: its data digests in the configuration)."""
    folder.mkdir(parents=True, exist_ok=True)
    from conformance.report.build import render_markdown

    (folder / "report.json").write_text(json.dumps(report, indent=2) + "\n")
    shutil.copy(EXAMPLE / "junit.xml", folder / "junit.xml")
    (folder / "report.md").write_text(render_markdown(report))   # the vendor re-renders it, as run does
    release = releases.load_releases(releases_file)[report["suite"]["version"]]
    schema = releases.release_file(release, "report_schema_sha256", releases_file)
    read = submission.read_folder(folder)
    statement = att.build_statement(report, read.digests(), datafiles.sha256_file(schema), release.descriptors())
    envelope = dsse.make_envelope(canonical_json(statement), keys.load_private_key(private_key))
    (folder / att.ENVELOPE_NAME).write_text(json.dumps(envelope))
    (folder / att.BUNDLE_NAME).write_text(json.dumps(dsse.make_bundle(envelope)))
    return folder


def verify(folder: Path, key: keys.KeyPair, releases_file: Path = RELEASES) -> Verification:
    return verify_path(folder, [key_from_file(key.public_path)], releases_file=releases_file)


def failing(v: Verification) -> dict[str, str]:
    return {line.name: line.detail for line in v.lines if not line.ok}


def attack(tmp_path: Path, key: keys.KeyPair, edit: Callable[[dict[str, Any]], None]) -> dict[str, str]:
    report = real_report()
    edit(report)
    return failing(verify(sign_as_vendor(tmp_path / "r", retally(report), key.private_path), key))


def test_the_real_run_re_signed_verifies(tmp_path: Path, key: keys.KeyPair) -> None:
    """The control: the unedited real report, retallied and re-signed, verifies on every line."""
    report = real_report()
    assert retally(copy.deepcopy(report)) == report  # retally changes nothing in an honest report
    v = verify(sign_as_vendor(tmp_path / "r", report, key.private_path), key)
    assert v.ok, failing(v)
    assert {"manifest", "environment", "release-files", "cross-check resource",
            "cross-check accelerator_type"} <= {line.name for line in v.lines}


# --------------------------------------------------------------------------- class 2: facts

def _nodes(r: dict[str, Any]) -> list[dict[str, Any]]:
    return r["environment"]["devices"]["nodes"]


def _set_node_count(r: dict[str, Any], n: int) -> None:
    r["shape"]["nodes"] = r["cluster"]["nodes"] = r["preflight"]["nodes"] = r["manifest"]["cluster"]["nodes"] = n
    r["environment"]["devices"]["total"] = sum(x["count"] for x in _nodes(r))


def _node_twice(r: dict[str, Any]) -> None:
    _nodes(r).append(copy.deepcopy(_nodes(r)[0]))
    _set_node_count(r, 3)


def _node_twice_renamed(r: dict[str, Any]) -> None:
    twin = copy.deepcopy(_nodes(r)[0])
    twin["node_id"] = "f" * 56  # its ray.io/node-id label still names the first node
    _nodes(r).append(twin)
    _set_node_count(r, 3)


def _fewer_devices_on_one_node(r: dict[str, Any]) -> None:
    _nodes(r)[1]["count"] = 2.0
    _nodes(r)[1]["labels"]["ray.io/accelerator-count"] = "2"


def _no_domains_on_one_node(r: dict[str, Any]) -> None:
    for k in ("ray.io/accelerator-domain", "ray.io/rack"):
        _nodes(r)[1]["labels"].pop(k)


def _other_device_type(r: dict[str, Any]) -> None:
    for n in _nodes(r):
        n["accelerator_type"] = n["labels"]["ray.io/accelerator-type"] = "OTHER-Z9"


def _other_resource(r: dict[str, Any]) -> None:
    r["environment"]["devices"]["resource"] = "GPU"


def _string_node_count(r: dict[str, Any]) -> None:
    r["manifest"]["cluster"]["nodes"] = "5"


def _unknown_manifest_field(r: dict[str, Any]) -> None:
    r["manifest"]["accelerator"]["trust_me"] = True


def _wrong_manifest_type(r: dict[str, Any]) -> None:
    r["manifest"]["topology"]["expected"]["fully_connected"] = "yes"


def _remote_mode_hides_the_manifest_nodes(r: dict[str, Any]) -> None:
    r["cluster"]["mode"] = "remote"
    r["manifest"]["cluster"]["nodes"] = 8


@pytest.mark.parametrize("edit, line, needle", [
    (_node_twice, "cross-check nodes", "listed 2 times"),
    (_node_twice_renamed, "cross-check nodes", "carries ray.io/node-id"),
    (_fewer_devices_on_one_node, "cross-check devices_per_node", "must hold on every node"),
    (_no_domains_on_one_node, "cross-check domain_labels", "must hold on every node"),
    (_other_device_type, "cross-check accelerator_type", "OTHER-Z9"),
    (_other_resource, "cross-check resource", "'GPU'"),
    (_string_node_count, "cross-check nodes", "'5' is not a positive whole number"),
    (_remote_mode_hides_the_manifest_nodes, "cross-check nodes", "manifest.cluster.nodes says 8"),
], ids=lambda x: getattr(x, "__name__", "")[:40] if callable(x) else None)
def test_a_fact_holds_on_every_node_and_every_source_counts(tmp_path: Path, key: keys.KeyPair, edit, line: str,
                                                            needle: str) -> None:
    bad = attack(tmp_path, key, edit)
    assert line in bad and needle in bad[line], bad


@pytest.mark.parametrize("edit", [_string_node_count, _unknown_manifest_field, _wrong_manifest_type])
def test_the_embedded_manifest_must_be_one_the_release_accepts(tmp_path: Path, key: keys.KeyPair, edit) -> None:
    bad = attack(tmp_path, key, edit)
    assert "manifest" in bad and "0.1.0+data.6" in bad["manifest"], bad


def test_an_unknown_manifest_field_is_refused_by_that_line_alone(tmp_path: Path, key: keys.KeyPair) -> None:
    assert set(attack(tmp_path, key, _unknown_manifest_field)) == {"manifest"}


@pytest.mark.parametrize("field, value", [("torch", "2.12.0"), ("torch", "3.1.0"), ("python", "3.9.18"),
                                          ("torch", "not-a-version")])
def test_python_and_torch_must_be_inside_the_suites_support(tmp_path: Path, key: keys.KeyPair, field: str,
                                                            value: str) -> None:
    bad = attack(tmp_path, key, lambda r: r["environment"].update({field: value}))
    assert set(bad) == {"environment"} and f"environment.{field}" in bad["environment"], bad


# --------------------------------------------------------------------------- class 3: evidence

def _check(r: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in r["checks"] if c["id"] == cid)


def _negative_restart(r: dict[str, Any]) -> None:
    _check(r, "FR-006")["metrics"]["restart_s"] = -40.0


def _negative_step(r: dict[str, Any]) -> None:
    _check(r, "FR-001")["metrics"]["scenarios"]["kill-holder-then-reuse"]["steps_s"]["device reused"] = -1.0


def _summary_against_matrix(r: dict[str, Any]) -> None:
    _check(r, "PF-004")["metrics"]["links"]["cross_node"]["min_gbps"] = 0.32  # the matrix's slowest is 0.25


def _fewer_rounds(r: dict[str, Any]) -> None:
    m = _check(r, "TR-013")["metrics"]
    m["rounds"] = 2
    for probe in m["growth_per_round_bytes"]:
        m["growth_per_round_bytes"][probe] = m["growth_per_round_bytes"][probe][:2]


def _fewer_storm_rounds(r: dict[str, Any]) -> None:
    _check(r, "FR-004")["metrics"]["round_s"] = [1.3]


def _failed_scenario_marked_pass(r: dict[str, Any]) -> None:
    _check(r, "FR-001")["metrics"]["scenarios"]["kill-holder-then-reuse"]["outcome"] = "fail"


def _scenario_over_its_bound(r: dict[str, Any]) -> None:
    _check(r, "FR-002")["metrics"]["scenarios"]["crash-holder-then-reuse"]["elapsed_s"] = 400.0


def _scenario_bound_inflated(r: dict[str, Any]) -> None:
    sc = _check(r, "FR-001")["metrics"]["scenarios"]["kill-holder-then-reuse"]
    sc.update(bound_s=500.0, elapsed_s=400.0)  # within its own recorded bound, not the release's


def _survivors_waiting_marked_pass(r: dict[str, Any]) -> None:
    r["manifest"]["collective"] = {"backend": "GLOO"}
    c = _check(r, "CC-009")
    c.update(outcome="pass", reason=None, metrics={"error_s": {"0": 1.2, "1": 300.0}})
    for other in r["checks"]:
        if other["id"].startswith("CC-") and other["outcome"] == "not_applicable":
            other.update(outcome="pass", reason=None)


def _label_problems_marked_pass(r: dict[str, Any]) -> None:
    _check(r, "TL-002")["metrics"]["problems"] = {"a2590df0": ["ray.io/rack 'rack 2' is not a valid label value"]}


def _wrong_bytes_marked_pass(r: dict[str, Any]) -> None:
    _check(r, "TR-001")["metrics"]["cpu"]["wrong"] = 3


def _tests_of_another_area(r: dict[str, Any]) -> None:
    _check(r, "DP-001")["tests"] = ["transport/test_transport_data.py::test_round_trip_exact"]


@pytest.mark.parametrize("edit, needle", [
    (_negative_restart, "FR-006 records an implausible figure: restart_s = -40.0"),
    (_negative_step, "FR-001 records an implausible figure"),
    (_summary_against_matrix, "PF-004 claims pass but its evidence gives fail: links.cross_node says"),
    (_fewer_rounds, "TR-013 claims pass but its evidence gives fail: TR-013: rounds is 2 but the release's params say rounds = 3"),
    (_fewer_storm_rounds, "FR-004 claims pass but its evidence gives fail: round_s records 1 round(s)"),
    (_failed_scenario_marked_pass, "FR-001 claims pass but scenario kill-holder-then-reuse records outcome 'fail'"),
    (_scenario_over_its_bound, "FR-002 claims pass but scenario crash-holder-then-reuse took 400.0 s"),
    (_scenario_bound_inflated, "FR-001 claims pass but scenario kill-holder-then-reuse records bound_s 500, "
                               "more than the 150 s the release's params give"),
    (_survivors_waiting_marked_pass, "CC-009 claims pass but its evidence gives fail"),
    (_tests_of_another_area, "DP-001 names test(s) outside its area 'device'"),
    (_label_problems_marked_pass, "TL-002 claims pass but its metrics record a failure: problems = "),
    (_wrong_bytes_marked_pass, "TR-001 claims pass but its metrics record a failure: cpu.wrong = 3"),
], ids=lambda x: getattr(x, "__name__", "")[:40] if callable(x) else None)
def test_evidence_is_judged_whole(tmp_path: Path, key: keys.KeyPair, edit, needle: str) -> None:
    bad = attack(tmp_path, key, edit)
    # the evidence line refuses it on its own; the companions line may refuse it too, where the
    # edit leaves the real run's junit.xml disagreeing with report.json (an outcome, a test id)
    assert set(bad) <= {"evidence", "companions"} and needle in bad.get("evidence", ""), bad


def test_current_release_collective_evidence(tmp_path: Path, key: keys.KeyPair) -> None:
    """CC-008 and CC-010 are judged on the params of the current release (the real report's
    release predates them): memory growth 30x the bound beside a pass, and a bandwidth judged
    without the nominal link the manifest declares."""
    rel = write_releases(tmp_path / "releases.yaml")
    for n, (edit, needle) in enumerate([
        (lambda m: m["CC-008"].update(memory={"held_mib": [[100.0, 100.0]] * 3 + [[1000.0, 100.0]],
                                              "growth_mib": [900.0, 0.0], "payload_mib": 40.0, "cycles": 4}),
         "CC-008 claims pass but its evidence gives fail: the memory member 0 holds grew by 900 MiB"),
        # a report of a release before the held-memory reading records the resident total
        (lambda m: m["CC-008"].update(memory={"rss_mib": [[100.0, 100.0]] * 3 + [[1000.0, 100.0]],
                                              "growth_mib": [900.0, 0.0], "payload_mib": 40.0, "cycles": 4}),
         "CC-008 claims pass but its evidence gives fail: the memory member 0 holds grew by 900 MiB"),
        (lambda m: m["CC-010"].update(nominal_link_gbps=None, link_fraction=None),
         "CC-010 records nominal_link_gbps None but the manifest's collective.nominal_link_gbps is 4.0"),
    ]):
        from signing_support import PASSING_METRICS

        metrics = copy.deepcopy(PASSING_METRICS)
        edit(metrics)
        report = build_report(metrics=metrics)
        folder = write_report_dir(tmp_path / f"r{n}", report)
        from conformance.signing.sign import sign_report_dir

        sign_report_dir(folder, key.private_path)
        bad = failing(verify(folder, key, rel))
        assert set(bad) == {"evidence"} and needle in bad["evidence"], bad


# --------------------------------------------------------------------------- class 4: capabilities

def test_a_profile_listed_twice_is_refused(tmp_path: Path, key: keys.KeyPair) -> None:
    report = retally(real_report())
    twin = dict(report["capabilities"][3], state="certified", declared=True, blocking=[])
    report["capabilities"].append(twin)  # verify would keep one entry, a page could show the other
    bad = failing(verify(sign_as_vendor(tmp_path / "r", report, key.private_path), key))
    assert set(bad) == {"capabilities"} and "collective listed more than once" in bad["capabilities"], bad


def _release_copy(tmp_path: Path, **replace: Path) -> Path:
    """The committed releases file and archive, with release 0.1.0+data.6 binding other label /
    profile files (archived beside it): what a later verifier has when those files changed since."""
    root = tmp_path / "sig"
    shutil.copytree(RELEASES.parent / "releases", root / "releases")
    doc = yaml.safe_load(RELEASES.read_text())
    entry = doc["releases"]["0.1.0+data.6"]
    for field, path in replace.items():
        target = root / "releases" / "0.1.0+data.6" / path.name
        shutil.copy(path, target)
        entry[field] = datafiles.sha256_file(target)
    (root / "releases.yaml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return root / "releases.yaml"


def test_the_label_vocabulary_is_the_releases(tmp_path: Path, key: keys.KeyPair) -> None:
    """The release's labels.yaml names no domain keys: the real nodes' rack/domain labels are no
    domain labels under it, whatever this verifier's own labels.yaml says."""
    labels = yaml.safe_load((datafiles.data_root() / "tiers" / "labels.yaml").read_text())
    for k in labels["keys"]:
        k.pop("domain", None)
        k.pop("packing", None)
    edited = tmp_path / "labels.yaml"
    edited.write_text(yaml.safe_dump(labels, sort_keys=False))
    rel = _release_copy(tmp_path, labels_sha256=edited)
    report = real_report()
    bad = failing(verify(sign_as_vendor(tmp_path / "r", report, key.private_path, rel), key, rel))
    assert "cross-check domain_labels" in bad and "environment.devices.nodes[].labels says False" in \
        bad["cross-check domain_labels"], bad


def test_the_capability_profiles_are_the_releases(tmp_path: Path, key: keys.KeyPair) -> None:
    """The release binds a profiles file without the transport profile the report claims: verify
    judges by the release's file, not this verifier's (whose profiles a later area may add to)."""
    report = real_report()
    claimed = {c["name"] for c in report["capabilities"]}
    profiles = yaml.safe_load(capabilities.capabilities_path().read_text())
    profiles["capabilities"] = [p for p in profiles["capabilities"] if p["name"] in claimed - {"transport"}]
    edited = tmp_path / "capabilities.yaml"
    edited.write_text(yaml.safe_dump(profiles, sort_keys=False))
    rel = _release_copy(tmp_path, capabilities_sha256=edited)
    bad = failing(verify(sign_as_vendor(tmp_path / "r", report, key.private_path, rel), key, rel))
    assert set(bad) == {"capabilities"} and "transport" in bad["capabilities"], bad
    # the release binds a profiles file this verifier lacks: no judging with its own copy
    (rel.parent / "releases" / "0.1.0+data.6" / "capabilities.yaml").unlink()
    bad = failing(verify(tmp_path / "r", key, rel))
    assert "release-files" in bad and "capabilities.yaml" in bad["release-files"], bad


def test_review_recomputes_with_the_releases_files_as_verify_does(tmp_path: Path, key: keys.KeyPair) -> None:
    """Review and verify judge one report with one vocabulary: the release's labels and profiles,
    never the reviewer's installed copies (a release without the transport profile certifies no
    transport in review either; a release whose labels name no domain keys has no domain labels)."""
    from conformance.signing.review import review_submission

    profiles = yaml.safe_load(capabilities.capabilities_path().read_text())
    profiles["capabilities"] = [p for p in profiles["capabilities"] if p["name"] != "transport"]
    edited = tmp_path / "capabilities.yaml"
    edited.write_text(yaml.safe_dump(profiles, sort_keys=False))
    rel = _release_copy(tmp_path, capabilities_sha256=edited)
    folder = sign_as_vendor(tmp_path / "r", real_report(), key.private_path, rel)
    row = review_submission(folder, [key_from_file(key.public_path)], releases.load_releases(rel), rel)
    assert row.capabilities is not None and "transport" not in row.capabilities, row
    assert "transport" in (row.claimed_capabilities or []) and row.capabilities_mismatch, row
    # the release binds a file this reviewer lacks: no recomputation with its own copy
    (rel.parent / "releases" / "0.1.0+data.6" / "capabilities.yaml").unlink()
    row = review_submission(folder, [key_from_file(key.public_path)], releases.load_releases(rel), rel)
    assert row.recomputed_tier is None and any("lacks release" in n for n in row.notes), row.notes
