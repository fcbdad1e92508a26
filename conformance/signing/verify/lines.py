"""What verify prints: one line per check, PASS or FAIL, in the order a reviewer reads them."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from conformance.sanitize import terminal
from conformance.signing.keyring import TrustedKey

NOT_CHECKED = "not checked: report.json is not schema-valid"

# The printed order, by a line's first word (a check's lines are written in the order the
# registry runs them, which a later check's inputs decide; the reader gets this one).
ORDER = ["signature", "identity", "revocation", "names", "bundle", "statement", "subjects", "subject", "companions", "page",
         "schema", "trust", "release", "superseded", "release-files", "manifest", "environment",
         "cross-check", "time", "claims", "tier", "capabilities", "completeness", "waivers", "validity", "evidence",
         "summary", "nodes", "shards", "selection"]


@dataclass(frozen=True)
class Line:
    name: str
    ok: bool
    detail: str

    def render(self) -> str:
        return f"{'PASS' if self.ok else 'FAIL'} {terminal(self.name, limit=200)}: {terminal(self.detail)}"


@dataclass
class Verification:
    """The outcome of verifying one envelope; `ok` only if every line passed. `signer` and
    `recomputed_tier` are what the signature and tier checks established (the statement's claims
    are judged against that tier; the decision records it)."""

    envelope: Path
    lines: list[Line] = field(default_factory=list)
    signer: TrustedKey | None = None
    report: dict[str, Any] | None = None
    recomputed_tier: str | None = None
    tier_known: bool = False

    @property
    def ok(self) -> bool:
        return bool(self.lines) and all(line.ok for line in self.lines)

    def add(self, name: str, ok: bool, detail: str) -> None:
        self.lines.append(Line(name, ok, detail))

    def judge(self, name: str, problems: list[str], passed: str) -> None:
        """One line: FAIL with every problem, or PASS saying what held."""
        self.add(name, not problems, "; ".join(problems) if problems else passed)

    def extend(self, lines: list[tuple[str, bool, str]]) -> None:
        for name, ok, detail in lines:
            self.add(name, ok, detail)

    def failed(self) -> list[str]:
        return [line.name for line in self.lines if not line.ok]

    def ordered(self) -> Verification:
        """The lines in ORDER (stable: a check's own lines keep theirs); a name not listed goes last."""
        self.lines.sort(key=lambda line: ORDER.index(line.name.split(" ")[0]) if line.name.split(" ")[0] in ORDER
                        else len(ORDER))
        return self


def short(digest: object) -> str:
    """A digest as a line shows it: its first 12 characters."""
    return f"{digest[:12]}…" if isinstance(digest, str) else repr(digest)


def tier_name(name: object) -> str:
    return "no tier" if name is None else repr(name)
