"""The signing/CI docs: the workflow example parses and uses the real subcommands and flags."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from conformance.cli.signing import build_parser
from conformance.signing.attestation import PREDICATE_TYPE

DOCS = Path(__file__).resolve().parents[2] / "docs"


def _commands(text: str, sub: str) -> list[list[str]]:
    """Every `ray-conformance SUB …` command line (continuations joined) in a shell script."""
    joined = re.sub(r"\\\n\s*", " ", text)
    out = []
    for m in re.finditer(rf"ray-conformance {sub}\b([^\n|;&]*)", joined):
        out.append([sub, *shlex.split(m.group(1).replace('"$', '"X').replace("$", "X"))])
    return out


def test_ci_workflow_parses_and_its_commands_are_valid() -> None:
    text = (DOCS / "ci.md").read_text()
    workflow = yaml.safe_load(re.search(r"```yaml\n(.*?)```", text, re.S).group(1))
    steps = workflow["jobs"]["conformance"]["steps"]
    assert "self-hosted" in workflow["jobs"]["conformance"]["runs-on"]
    scripts = "\n".join(s.get("run", "") for s in steps)
    parser = build_parser()
    for sub in ("sign", "verify", "diff"):
        found = _commands(scripts, sub)
        assert found, f"the workflow has no `{sub}` step"
        for argv in found:
            parser.parse_args(argv)  # raises SystemExit on an unknown flag
    sign_step = next(s for s in steps if "ray-conformance sign" in s.get("run", ""))
    assert "secrets." in str(sign_step["env"]) and "--passphrase-env" in sign_step["run"]
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)


def test_signing_doc_shows_the_cosign_command() -> None:
    text = (DOCS / "signing.md").read_text()
    joined = re.sub(r"\\\n\s*", " ", text)
    cmds = [m.group(0) for m in re.finditer(r"cosign verify-blob-attestation --[^\n]*", joined)]
    assert cmds
    for cmd in cmds:
        assert "--key" in cmd and "--insecure-ignore-tlog" in cmd and f"--type {PREDICATE_TYPE}" in cmd
    assert any("--signature report.intoto.json" in c for c in cmds)
