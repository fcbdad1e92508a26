"""Properties of verify (issue 9 item 11), checked on generated inputs. No Ray.

1. Tamper: any single-byte change to report.json, to the signed statement (the decoded payload,
   re-embedded without re-signing) or to the envelope file is rejected (a FAIL line or a
   one-line input error). The only envelope bytes DSSE does not sign are the keyid hint, JSON
   whitespace and the alphabet spelling of the same base64 value; a change there must leave the
   verified content (payloadType, body, signature bytes) exactly as it was.
2. Fuzz: >= 1,000 malformed inputs to verify, review, diff and validate-manifest (through the
   CLI's main, in-process) each end with exit 1 or 2, an exit-2 error is one line, nothing is a
   traceback, and each call stays within a time bound. A few run as real subprocesses too.
"""
from __future__ import annotations

import base64
import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conformance.cli.main import main as cli_main
from conformance.errors import UserError
from conformance.signing import attestation as att
from conformance.signing import dsse, keys
from conformance.signing.keyring import TrustedKey, key_from_file
from conformance.signing.sign import sign_report_dir
from conformance.signing.verify import read_envelope, verify_path
from signing_support import build_report, write_releases, write_report_dir
from suite_runner import sim_manifest

# Bounds on the work a malformed input costs, in this process's CPU seconds (time.process_time),
# never wall time: a shared, loaded CI runner stretches wall time (the 1040 cases took 414 s of
# wall at load 40 and about 100 s quiet) but not the CPU a pathological input burns.
CALL_CPU_BOUND_S = 5.0
FUZZ_CPU_BOUND_S = 240.0


@pytest.fixture(scope="module")
def signed(tmp_path_factory) -> dict[str, Any]:
    d = tmp_path_factory.mktemp("prop9")
    pair = keys.write_keypair(d / "k")
    write_releases(d / "releases.yaml")
    folder = write_report_dir(d / "r", build_report())
    sign_report_dir(folder, pair.private_path)
    (folder / att.BUNDLE_NAME).unlink()  # the pair is checked elsewhere; here one envelope is tampered
    return {"dir": d, "folder": folder, "pub": pair.public_path, "releases": d / "releases.yaml",
            "trusted": [key_from_file(pair.public_path)]}


def _envelope_positions(text: str) -> list[int]:
    """Offsets of every envelope byte except JSON whitespace and the keyid value (unsigned hint)."""
    doc = json.loads(text)
    keyid = doc["signatures"][0]["keyid"]
    start = text.index(json.dumps(keyid)) + 1
    skip = set(range(start, start + len(keyid)))
    in_string, escaped, out = False, False, []
    for i, ch in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        if (in_string or ch not in " \t\r\n") and i not in skip:
            out.append(i)
    return out


def _signed_content(path: Path) -> tuple[str, bytes, tuple[bytes | None, ...]]:
    env = read_envelope(path)
    return env.payload_type, env.body, tuple(s.sig for s in env.signatures)


def _outcome(folder: Path, trusted: list[TrustedKey], releases_file: Path) -> bool | str:
    """True: verified; False: a FAIL line; str: the one-line input error."""
    try:
        return verify_path(folder, trusted, releases_file=releases_file).ok
    except UserError as exc:
        assert "\n" not in str(exc)
        return str(exc)


@settings(max_examples=600, deadline=None, database=None, suppress_health_check=list(HealthCheck))
@given(target=st.sampled_from(["report", "statement", "envelope"]), where=st.floats(0, 1, exclude_max=True),
       delta=st.integers(1, 255))
def test_any_single_byte_change_is_rejected(signed: dict[str, Any], tmp_path_factory, target: str, where: float,
                                            delta: int) -> None:
    src: Path = signed["folder"]
    folder = tmp_path_factory.mktemp("t")
    for name in (*att.REPORT_FILES, att.ENVELOPE_NAME):
        (folder / name).write_bytes((src / name).read_bytes())
    if target == "report":
        raw = bytearray((src / "report.json").read_bytes())
        pos = int(where * len(raw))
        raw[pos] ^= delta
        (folder / "report.json").write_bytes(bytes(raw))
    elif target == "statement":
        env = json.loads((src / att.ENVELOPE_NAME).read_text())
        body = bytearray(base64.b64decode(env["payload"]))
        body[int(where * len(body))] ^= delta
        env["payload"] = base64.b64encode(bytes(body)).decode()
        (folder / att.ENVELOPE_NAME).write_text(json.dumps(env, indent=2))
    else:
        text = (src / att.ENVELOPE_NAME).read_text()
        positions = _envelope_positions(text)
        raw = bytearray(text.encode())
        raw[positions[int(where * len(positions))]] ^= delta
        (folder / att.ENVELOPE_NAME).write_bytes(bytes(raw))
    result = _outcome(folder, signed["trusted"], signed["releases"])
    if result is True:
        # only an unsigned spelling changed: the verified content is byte-identical
        assert target == "envelope"
        assert _signed_content(folder / att.ENVELOPE_NAME) == _signed_content(src / att.ENVELOPE_NAME)


# --------------------------------------------------------------------------- fuzz

def _mutations(rng: random.Random, doc: Any) -> Any:
    """One structural mutation of a JSON-like document: a wrong type, a deletion, deep nesting..."""
    def paths(node: Any, prefix: tuple = ()) -> list[tuple]:
        out = [prefix]
        if isinstance(node, dict):
            for k, v in list(node.items())[:40]:
                out += paths(v, prefix + (k,))
        elif isinstance(node, list):
            for i, v in enumerate(node[:5]):
                out += paths(v, prefix + (i,))
        return out

    doc = json.loads(json.dumps(doc))
    path = rng.choice(paths(doc))
    junk = rng.choice([None, 5, -1, 1e308, "", "x" * 300, "\x1b[31mPASS\nVERIFIED", [], {}, True,
                       "|a|b|", [[[[[[1]]]]]], {"checks": 5}, "2.60.0", 10 ** 30])
    if not path:
        return junk
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    action = rng.random()
    if action < 0.5:
        parent[path[-1]] = junk
    elif action < 0.8 and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        nested: Any = 1
        for _ in range(rng.choice([70, 300, 800])):  # deeper still: _text_mutation
            nested = [nested]
        parent[path[-1]] = nested
    return doc


def _text_mutation(rng: random.Random, text: str) -> str:
    choice = rng.random()
    if choice < 0.25:
        return text[: rng.randrange(len(text))]
    if choice < 0.5:
        pos = rng.randrange(len(text))
        return text[:pos] + rng.choice(["NaN", "Infinity", '"', "{", "]", "\x00", "\udcff"[:0] + "\u202e", ","]) \
            + text[pos + 1:]
    if choice < 0.7:
        return text.replace('"id"', '"id": "DUP", "id"', 1)
    if choice < 0.85:
        return "[" * 100000
    return "".join(rng.choice("{}[]\",:0aN \n") for _ in range(rng.randrange(1, 200)))


def _first_difference(a: Any, b: Any, path: str = "$") -> str:
    """Where two JSON documents first differ (for assertion messages)."""
    if type(a) is not type(b):
        return f"{path}: {a!r:.80} vs {b!r:.80}"
    if isinstance(a, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                return f"{path}.{k}: present in one only"
            if a[k] != b[k]:
                return _first_difference(a[k], b[k], f"{path}.{k}")
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} vs {len(b)} items"
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]")
    return f"{path}: {a!r:.80} vs {b!r:.80}"


def _run(argv: list[str], capsys) -> tuple[int, str, str, float]:
    """Run one CLI command in this process: exit code, stdout, stderr and the CPU seconds it took."""
    start = time.process_time()
    try:
        rc = cli_main(argv)
    except SystemExit as exc:
        rc = int(exc.code or 0)
    elapsed = time.process_time() - start
    out = capsys.readouterr()
    return rc, out.out, out.err, elapsed


def _check(rc: int, out: str, err: str, elapsed: float, what: str, ok_codes: tuple[int, ...] = (1, 2)) -> None:
    assert rc in ok_codes, f"{what}: exit {rc}\n{out}\n{err}"
    assert "Traceback" not in out + err, f"{what}: {err}"
    if rc == 2:
        assert len(err.strip().splitlines()) == 1, f"{what}: {err}"
    assert "\x1b" not in out + err, what
    assert elapsed < CALL_CPU_BOUND_S, f"{what}: {elapsed:.1f} CPU s"


def _write_bytes(path: Path, content: str | bytes) -> None:
    path.write_bytes(content.encode("utf-8", "surrogatepass") if isinstance(content, str) else content)


def test_fuzz_malformed_inputs_never_traceback(signed: dict[str, Any], tmp_path: Path, capsys) -> None:
    rng = random.Random(int(os.environ.get("CONFORMANCE_FUZZ_SEED", "9")))  # other seeds: explore
    src: Path = signed["folder"]
    report = json.loads((src / "report.json").read_text())
    envelope = json.loads((src / att.ENVELOPE_NAME).read_text())
    statement = json.loads(base64.b64decode(envelope["payload"]))
    manifest = sim_manifest()
    sk = keys.load_private_key(Path(str(signed["pub"]).replace(keys.PUBLIC_KEY_NAME, keys.PRIVATE_KEY_NAME)))
    common = ["--releases", str(signed["releases"])]
    counts = {"verify": 0, "review": 0, "diff": 0, "validate-manifest": 0}
    start = time.process_time()

    def case_verify(i: int) -> None:
        folder = tmp_path / f"v{i}"
        for name in (*att.REPORT_FILES, att.ENVELOPE_NAME):
            folder.mkdir(exist_ok=True)
            (folder / name).write_bytes((src / name).read_bytes())
        kind = rng.random()
        if kind < 0.35:  # report.json mutated (structure or text)
            text = json.dumps(_mutations(rng, report)) if rng.random() < 0.6 else \
                _text_mutation(rng, (src / "report.json").read_text())
            _write_bytes(folder / "report.json", text)
        elif kind < 0.6:  # statement mutated and re-signed by the trusted key (a dishonest key holder)
            body = json.dumps(_mutations(rng, statement)).encode()
            _write_bytes(folder / att.ENVELOPE_NAME, json.dumps(dsse.make_envelope(body, sk)))
        else:  # envelope mutated
            text = json.dumps(_mutations(rng, envelope)) if rng.random() < 0.6 else \
                _text_mutation(rng, (src / att.ENVELOPE_NAME).read_text())
            _write_bytes(folder / att.ENVELOPE_NAME, text)
        rc, out, err, elapsed = _run(["verify", str(folder), "--key", str(signed["pub"]), *common], capsys)
        _check(rc, out, err, elapsed, f"verify #{i}", ok_codes=(0, 1, 2))
        if rc == 0:  # a no-op mutation (a keyid hint dropped, a value replaced by an equal one): same content
            assert (folder / "report.json").read_bytes() == (src / "report.json").read_bytes()
            got = json.loads(_signed_content(folder / att.ENVELOPE_NAME)[1])
            assert got == statement, _first_difference(got, statement)

    def case_review(i: int) -> None:
        root = tmp_path / f"rv{i}"
        for j in range(2):
            sub = root / f"s{j}"
            sub.mkdir(parents=True)
            for name in (*att.REPORT_FILES, att.ENVELOPE_NAME):
                (sub / name).write_bytes((src / name).read_bytes())
            text = json.dumps(_mutations(rng, report)) if rng.random() < 0.6 else \
                _text_mutation(rng, (src / "report.json").read_text())
            _write_bytes(sub / "report.json", text)
        rc, out, err, elapsed = _run(["review", str(root), *common], capsys)
        # review completes its table whatever the submissions hold: exit 0 or 1, never an abort
        _check(rc, out, err, elapsed, f"review #{i}", ok_codes=(0, 1))
        assert "s0" in out and "s1" in out

    def case_diff(i: int) -> None:
        old, new = tmp_path / f"d{i}-old.json", tmp_path / f"d{i}-new.json"
        old.write_bytes((src / "report.json").read_bytes())
        text = json.dumps(_mutations(rng, report)) if rng.random() < 0.6 else \
            _text_mutation(rng, (src / "report.json").read_text())
        _write_bytes(new, text)
        args = ["diff", str(old), str(new)]
        if rng.random() < 0.2:
            args += ["--tolerance", rng.choice(["nan", "inf", "-1", "x", "1e400", "-0"])]
        if rng.random() < 0.5:
            old, new = new, old
            args[1:3] = [str(old), str(new)]
        rc, out, err, elapsed = _run(args, capsys)
        _check(rc, out, err, elapsed, f"diff #{i}", ok_codes=(0, 1, 2))

    def case_manifest(i: int) -> None:
        path = tmp_path / f"m{i}.{rng.choice(['yaml', 'json'])}"
        if rng.random() < 0.6:  # JSON text is YAML too; yaml.safe_dump cannot write deep nesting
            path.write_text(json.dumps(_mutations(rng, manifest)))
        else:
            _write_bytes(path, _text_mutation(rng, yaml.safe_dump(manifest)))
        rc, out, err, elapsed = _run(["validate-manifest", str(path)], capsys)
        _check(rc, out, err, elapsed, f"validate-manifest #{i}", ok_codes=(0, 2))

    cases: list[tuple[str, Callable[[int], None]]] = [("verify", case_verify), ("review", case_review),
                                                       ("diff", case_diff), ("validate-manifest", case_manifest)]
    for i in range(1040):
        name, case = cases[i % 4]
        case(i)
        counts[name] += 1
    assert sum(counts.values()) >= 1000 and min(counts.values()) >= 250
    assert time.process_time() - start < FUZZ_CPU_BOUND_S


@pytest.mark.parametrize("argv_tail, code", [
    (["verify", "{folder}", "--key", "{pub}"], 1),   # report.json replaced by {"checks": 5}
    (["diff", "{folder}", "{folder}", "--tolerance", "nan"], 2),
    (["review", "{root}"], 1),
    (["validate-manifest", "{folder}/report.json"], 2),
])
def test_real_subprocess_cases_end_in_one_line(signed: dict[str, Any], tmp_path: Path, argv_tail: list[str],
                                               code: int) -> None:
    folder = tmp_path / "root" / "sub"
    folder.mkdir(parents=True)
    for name in (*att.REPORT_FILES, att.ENVELOPE_NAME):
        (folder / name).write_bytes((signed["folder"] / name).read_bytes())
    (folder / "report.json").write_text('{"checks": 5}')
    argv = [a.format(folder=folder, pub=signed["pub"], root=tmp_path / "root") for a in argv_tail]
    if argv[0] != "validate-manifest":
        argv += ["--releases", str(signed["releases"])] if argv[0] != "diff" else []
    proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", *argv], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    if code == 2:
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
