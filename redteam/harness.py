"""Held-out red-team harness: copy a real report, apply one dishonest edit, keep every derived
field consistent the way the suite computes it, re-sign with the vendor's own key, and verify.

Usage:
  .venv/bin/python redteam/harness.py SRC_DIR [ATTACK ...]      (attacks defined in redteam/attacks.py)
Environment:
  RT_WORK   where attack folders and the key live (default /tmp/rt)
  RT_ATK    attack folders (default $RT_WORK/atk); RT_RESULTS the results file (default redteam/results.txt)
Writes RT_WORK/atk/<name>/ (the signed folder and verify.txt) and appends to redteam/results.txt.

Not a pytest module (redteam/ is outside tests/): run it by hand.
"""
from __future__ import annotations

import copy
import importlib
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any, Callable

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
WORK = Path(os.environ.get("RT_WORK", "/tmp/rt"))
CLI = str(REPO / ".venv" / "bin" / "ray-conformance")
KEY = WORK / "key" / "conformance.key"
PUB = WORK / "key" / "conformance.pub"
KEYRING = WORK / "key" / "keyring.yaml"
ATK = Path(os.environ.get("RT_ATK", str(WORK / "atk")))          # where each attack's folder goes
RESULTS = Path(os.environ.get("RT_RESULTS", str(HERE / "results.txt")))


def find(report: dict[str, Any], cid: str) -> dict[str, Any]:
    return next(c for c in report["checks"] if c["id"] == cid)


def ensure_key(vendor: str) -> None:
    """The vendor's own key pair (keygen), bound to the report's vendor in a keyring."""
    if not KEY.exists():
        subprocess.run([CLI, "keygen", "--out", str(KEY.parent)], check=True, capture_output=True)
    KEYRING.write_text(f"keys:\n  - name: redteam-vendor\n    public_key: {PUB}\n    vendors: [{json.dumps(vendor)}]\n")


def refresh(report: dict[str, Any]) -> None:
    """Recompute every derived field the way the run does (conformance/report/build.py and
    run/hooks.py): tier, tiers, summary, capabilities, partial, next steps."""
    from conformance.catalog import data
    from conformance.catalog.capabilities import compute_capabilities, load_profiles
    from conformance.catalog.ladder import RunContext, compute_tiers
    from conformance.catalog.selection import is_partial
    from conformance.report.next_steps import next_steps
    from conformance.report.results import summarize
    from conformance.run.hooks import area_docs

    d = data.load_suite_data()
    manifest = report["manifest"]
    ctx = RunContext(transport_declared=bool(manifest.get("transport")), nodes=int(report["cluster"].get("nodes") or 0),
                     shape=report.get("shape"))
    report["tier"], report["tiers"] = compute_tiers(report["checks"], d.checklist, d.ladder, ctx)
    report["summary"] = summarize(report["checks"])
    report["capabilities"] = compute_capabilities(report["checks"], d.checklist, load_profiles(), manifest)
    report["partial"] = is_partial(report["selection"])
    if "next_steps" in report:
        report["next_steps"] = next_steps(report, d.checklist, d.ladder, area_docs())


def sync_junit(report: dict[str, Any], raw: bytes) -> bytes:
    """junit.xml stating what report.json states (as write_junit writes it): each check's cases
    take its outcome; case times scaled to its duration_s; the suite's counts and time."""
    root = ET.fromstring(raw)
    suite = root[0]
    suite.set("timestamp", report["started_at"])
    suite.set("time", f"{report['duration_s']:.3f}")
    by: dict[str, list[ET.Element]] = {}
    for case in list(suite):
        by.setdefault(case.get("classname") or "", []).append(case)
    order = [c["id"] for c in report["checks"]]
    for case in list(suite):
        suite.remove(case)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for c in report["checks"]:
        cases = by.get(c["id"]) or []
        names = [t.split("::")[-1] for t in c.get("tests") or []] or ["not_run"]
        if [x.get("name") for x in cases] != names:   # tests changed: rebuild the cases
            cases = [ET.Element("testcase", classname=c["id"], name=n, time="0.000") for n in names]
        total = sum(float(x.get("time") or 0) for x in cases)
        want = float(c.get("duration_s") or 0)
        for i, x in enumerate(cases):
            t = (float(x.get("time") or 0) * want / total) if total else (want if i == 0 else 0.0)
            x.set("time", f"{t:.3f}")
            outcome = c["outcome"] if c.get("tests") else "skip"
            had = [ch for ch in x if ch.tag in ("failure", "error", "skipped")]
            keep = None
            if outcome == "flaky" and had and had[0].tag == "failure":
                keep = had[0]
            for ch in had:
                x.remove(ch)
            counts["tests"] += 1
            reason = c.get("reason") or ""
            if outcome == "flaky":
                counts["failures"] += 1
                x.append(keep if keep is not None else ET.Element("failure", message=f"flaky: {reason}"[:1000]))
            elif outcome == "fail":
                counts["failures"] += 1
                ET.SubElement(x, "failure", message=reason[:1000])
            elif outcome == "error":
                counts["errors"] += 1
                ET.SubElement(x, "error", message=reason[:1000])
            elif outcome in ("skip", "not_applicable", "waived"):
                counts["skipped"] += 1
                ET.SubElement(x, "skipped", message=f"{outcome}: {reason}"[:1000])
            suite.append(x)
    del order
    for k, v in counts.items():
        suite.set(k, str(v))
    tree = ET.ElementTree(root)
    ET.indent(tree)
    import io
    buf = io.BytesIO()
    tree.write(buf, encoding="utf-8", xml_declaration=True)
    return buf.getvalue()


class Attack:
    """An edit of report.json (and, optionally, of the folder's other files after rendering)."""

    def __init__(self, name: str, models: str, edit: Callable[[dict[str, Any]], Any], *, derive: bool = True,
                 after: Callable[[Path], Any] | None = None, keyring: bool = True,
                 post: Callable[[Path, str], str] | None = None, verify_args: tuple[str, ...] = (),
                 raw: bool = False, after_sign: Callable[[Path], Any] | None = None) -> None:
        self.name, self.models, self.edit, self.derive, self.after, self.keyring = name, models, edit, derive, after, keyring
        self.post, self.verify_args = post, verify_args
        self.raw, self.after_sign = raw, after_sign


def raw_sign(out: Path) -> None:
    """Sign the folder as `sign` would, without its refusals (a dishonest vendor's own tool):
    verify then meets the hostile input itself."""
    import hashlib

    from conformance.catalog import releases
    from conformance.signing import dsse, keys
    from conformance.signing.attestation import build_statement
    from conformance.signing.canonical import canonical_json

    report = json.loads((out / "report.json").read_text())
    digests = {n: hashlib.sha256((out / n).read_bytes()).hexdigest() for n in ("report.json", "junit.xml", "report.md")}
    release = releases.load_releases(releases.default_path())[report["suite"]["version"]]
    try:
        statement = build_statement(report, digests, release.report_schema_sha256, release.descriptors())
    except (AttributeError, TypeError, KeyError):   # a shape build_statement cannot read: the lists of its values
        shown = dict(report, checks=list(report["checks"].values()) if isinstance(report.get("checks"), dict) else [])
        statement = build_statement(shown, digests, release.report_schema_sha256, release.descriptors())
    env = dsse.make_envelope(canonical_json(statement), keys.load_private_key(KEY))
    (out / "report.intoto.json").write_text(json.dumps(env, indent=2, sort_keys=True) + "\n")


def run(src: Path, atk: Attack) -> str:
    from conformance.report.build import render_markdown

    out = ATK / atk.name
    shutil.rmtree(out, ignore_errors=True)
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("logs"))
    for f in ("report.intoto.json", "report.sigstore.json", "report.html"):
        (out / f).unlink(missing_ok=True)
    rep = json.loads((out / "report.json").read_text())
    atk.edit(rep)
    if atk.derive:
        refresh(rep)
    (out / "report.json").write_text(json.dumps(rep, indent=2, sort_keys=True, allow_nan=False) + "\n")
    try:   # hostile shapes the renderers cannot take keep the run's report.md / junit.xml
        (out / "report.md").write_text(render_markdown(copy.deepcopy(rep)))
    except Exception:   # noqa: BLE001
        pass
    try:
        (out / "junit.xml").write_bytes(sync_junit(rep, (out / "junit.xml").read_bytes()))
    except Exception:   # noqa: BLE001
        pass
    if atk.after:
        atk.after(out)
    if atk.raw:   # a vendor's own signing tool: sign's refusals (schema, trust, names) skipped
        raw_sign(out)
        s = subprocess.CompletedProcess([], 0, "", "")
    else:
        s = subprocess.run([CLI, "sign", "--key", str(KEY), str(out)], capture_output=True, text=True, cwd=out)
    if s.returncode:
        line = (s.stderr or s.stdout).strip().splitlines()[-1:] or [""]
        verdict = f"SIGN-REFUSED rc={s.returncode}: {line[0][:300]}"
        (out / "verify.txt").write_text(s.stdout + s.stderr)
        return verdict
    if atk.after_sign:   # tampering after signing (the envelope, the folder)
        atk.after_sign(out)
    trust = ["--keyring", str(KEYRING)] if atk.keyring else ["--key", str(PUB)]
    v = subprocess.run([CLI, "verify", str(out), *trust, *atk.verify_args], capture_output=True, text=True, cwd=out)
    (out / "verify.txt").write_text(v.stdout + v.stderr)
    text = v.stdout + v.stderr
    extra = ""
    if atk.post:
        extra = " [" + atk.post(out, text) + "]"
    return _verdict(v.returncode, text) + extra


def _verdict(rc: int, text: str) -> str:
    if "Traceback" in text:
        return f"CRASH rc={rc}: {text.strip().splitlines()[-1][:300]}"
    if rc == 0:
        ev = next((ln for ln in text.splitlines() if ln.startswith("PASS evidence")), "")
        return "VERIFIED" + (f" ({ev[:200]})" if "vendor's word" in ev else "")
    fails = [ln for ln in text.splitlines() if ln.startswith("FAIL") or "error:" in ln]
    return f"REFUSED rc={rc}: " + " || ".join(x[:300] for x in fails[:3])


def main(argv: list[str]) -> int:
    src = Path(argv[0])
    import attacks
    importlib.reload(attacks)
    rep = json.loads((src / "report.json").read_text())
    ensure_key(rep["manifest"]["vendor"])
    chosen = argv[1:] or list(attacks.ATTACKS)
    results = RESULTS
    for name in chosen:
        atk = attacks.ATTACKS[name]
        try:
            verdict = run(src, atk)
        except Exception as exc:   # noqa: BLE001 (an attack whose edit does not apply to this report)
            verdict = f"HARNESS-ERROR {type(exc).__name__}: {exc}"
        print(f"{name}: {verdict}", flush=True)
        with results.open("a") as f:
            f.write(f"{name}\t{atk.models}\t{verdict}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
