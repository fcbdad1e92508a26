"""Regenerate the committed, signed example report of the simulated accelerator.

`python -m conformance.example reports/example` (or `make example`): certifies the bundled
simulated accelerator (its fullest manifest), signs the report with a fresh key whose private
half is thrown away, keeps the public key beside the report, and verifies the result. The
example is the project's own artifact, so regenerating replaces it.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SIMULATED = Path(__file__).resolve().parent / "simulated"
EXAMPLE_FILES = ("report.json", "report.md", "junit.xml", "report.intoto.json", "report.sigstore.json", "report.html")


def example_manifest() -> Path:
    """The richest bundled manifest (2 nodes + transport when present)."""
    for name in ("manifest-full.yaml", "manifest-2node.yaml", "manifest.yaml"):
        if (SIMULATED / name).exists():
            return SIMULATED / name
    raise FileNotFoundError("no bundled manifest")


def regenerate(dest: Path) -> int:
    from conformance.signing.keyring import key_from_file
    from conformance.signing.keys import write_keypair
    from conformance.signing.sign import sign_report_dir
    from conformance.signing.verify import verify_path

    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "run"
        proc = subprocess.run([sys.executable, "-m", "conformance.cli.main", "run", "--manifest", str(example_manifest()),
                               "--out", str(run_dir)])
        if proc.returncode != 0:
            print(f"example: the certification run failed (exit {proc.returncode})", file=sys.stderr)
            return proc.returncode
        pair = write_keypair(Path(tmp) / "key")
        sign_report_dir(run_dir, pair.private_path)
        dest.mkdir(parents=True, exist_ok=True)
        for name in EXAMPLE_FILES:
            shutil.copy2(run_dir / name, dest / name)
        shutil.copy2(pair.public_path, dest / "example.pub")
    result = verify_path(dest, [key_from_file(dest / "example.pub")])
    for line in result.lines:
        print(f"{'PASS' if line.ok else 'FAIL'} {line.name}: {line.detail}")
    print(f"example: {'verified' if result.ok else 'NOT verified'} → {dest}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(regenerate(Path(sys.argv[1] if len(sys.argv) > 1 else "reports/example")))
