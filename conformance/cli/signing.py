"""CLI subcommands for signed reports: keygen, sign, verify, verify-decision, revoke-reports, review, diff.

The main CLI (conformance/cli/main.py) calls `register(subparsers)`; each subcommand sets `func`, a
handler that takes the parsed args and returns the exit code. Bad input raises UserError, which
main() prints as one line (exit 2). `python -m conformance.cli.signing ...` runs these
subcommands on their own, with the same error handling.

Passphrases are read only from an environment variable named by --passphrase-env, never from
argv, and neither they nor private keys are ever printed.
"""
from __future__ import annotations

import argparse
import math
import sys
from datetime import date
from pathlib import Path
from typing import Any, Sequence

from conformance.catalog.data import load_suite_data
from conformance.catalog.datafiles import sha256_bytes
from conformance.cli import numbers as cli_numbers
from conformance.errors import UserError
from conformance.exit_codes import Exit
from conformance.sanitize import terminal
from conformance.signing import attestation, decision, diff, keyring, keys, merit_diff, receipts, report_revocation, review, trust, validity, verify
from conformance.signing.sign import sign_report_dir

__all__ = ["register", "main", "build_parser", "sign_report_dir"]


class _RefusePassphrase(argparse.Action):
    """`--passphrase VALUE` must fail without echoing VALUE (argparse would print it back)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: str | Sequence[Any] | None,
                 option_string: str | None = None) -> None:
        parser.error("passphrases are never taken from the command line; put it in an environment "
                     "variable and pass its name with --passphrase-env VAR")


def _passphrase_options(p: argparse.ArgumentParser, help_text: str) -> None:
    p.add_argument("--passphrase-env", metavar="VAR", help=help_text)
    p.add_argument("--passphrase", nargs="?", action=_RefusePassphrase, help=argparse.SUPPRESS)


def _keygen(args: argparse.Namespace) -> int:
    passphrase = keys.passphrase_from_env(args.passphrase_env)
    pair = keys.write_keypair(Path(args.out), args.algorithm, passphrase)
    print(f"public key: {pair.public_path}")
    print(f"keyid: {pair.keyid}")
    print(f"private key: {pair.private_path} (mode 0600, "
          f"{'passphrase-protected' if passphrase else 'NOT passphrase-protected'}; keep it secret)")
    return 0


def _sign(args: argparse.Namespace) -> int:
    passphrase = keys.passphrase_from_env(args.passphrase_env)
    out = sign_report_dir(Path(args.report_dir), Path(args.key), passphrase, overwrite=args.force,
                          allow_insecure_key_mode=args.allow_insecure_key_mode, releases_file=args.releases)
    print(f"wrote {terminal(out)} and {out.with_name(attestation.BUNDLE_NAME).name}")
    warning = keys.kdf_warning(Path(args.key))
    if warning:
        print(f"warning: {terminal(warning)}", file=sys.stderr)
    return 0


def _trusted(args: argparse.Namespace) -> list[keyring.TrustedKey] | None:
    if getattr(args, "key", None):
        return [keyring.key_from_file(Path(args.key))]
    if getattr(args, "keyring", None):
        return keyring.load_keyring(Path(args.keyring))
    return None


def _revocations(args: argparse.Namespace, sig_keys: list[keyring.TrustedKey] | None = None
                 ) -> report_revocation.RevocationList | None:
    """The SIG's signed list of revoked reports (--revocations), checked with the SIG's key."""
    if not getattr(args, "revocations", None):
        return None
    if sig_keys is None:
        sig_key = getattr(args, "sig_key", None)
        if not sig_key:
            raise UserError("--revocations: pass the SIG's public key with --sig-key PUB to check the list",
                            field="--sig-key")
        sig_keys = [keyring.key_from_file(Path(sig_key))]
    return report_revocation.load_list(Path(args.revocations), sig_keys)


def _revoked_line(folder: Path, revocations: report_revocation.RevocationList | None) -> str | None:
    """The refusal of the report in `folder` when the SIG's list revokes it, else None."""
    if revocations is None:
        return None
    from conformance.signing.submission import read_folder

    listed = revocations.find(read_folder(folder).digests()[attestation.REPORT_JSON])
    return report_revocation.refusal(listed) if listed else None


def _verify(args: argparse.Namespace) -> int:
    trusted = _trusted(args)
    if not trusted:
        raise UserError("verify: pass --key PUB or --keyring FILE")
    path = Path(args.path)
    if path.is_file() and path.name not in (attestation.ENVELOPE_NAME, attestation.BUNDLE_NAME) \
            and decision.is_decision(path):
        if args.keyring:  # a vendor key of the keyring must never pass for the SIG's
            raise UserError("verify: a decision is checked with the SIG's public key alone: pass --key SIG_PUB, "
                            "not --keyring", field="--key")
        return _check_decision(path, trusted, args)
    revocations = _revocations(args)
    envelope = verify.locate_envelope(path)
    refused = _revoked_line(envelope.parent, revocations)
    if refused:
        print(f"REJECTED: {terminal(envelope)}: {refused}")
        return Exit.BELOW_TIER
    result = verify.verify_path(path, trusted, releases_file=args.releases, at=args.at)
    for line in result.lines:
        print(line.render())
    failed = list(dict.fromkeys(result.failed()))
    if args.decision_key:
        _write_decision(args, result, failed)
    if failed:
        print(f"REJECTED: {terminal(result.envelope)}: failed {terminal(', '.join(failed))}")
        return 1
    print(f"VERIFIED: {terminal(result.envelope)}")
    return 0


def _write_decision(args: argparse.Namespace, result: verify.Verification, failed: list[str]) -> None:
    """Sign the SIG's decision on the report verify just judged (--decision-key)."""
    from conformance.catalog import releases

    if result.report is None:
        raise UserError("verify: no report to decide on")
    passphrase = keys.passphrase_from_env(args.passphrase_env)
    folder = result.envelope.parent
    releases_file = Path(args.releases or releases.default_path())
    statement = decision.decide(folder, result.envelope, result.report, ok=not failed, failed=failed,
                                recomputed_tier=result.recomputed_tier, releases_file=releases_file,
                                key_path=Path(args.decision_key), passphrase=passphrase, now=trust.utc_now())
    out = decision.write(Path(args.decision_out or folder / decision.DECISION_NAME), statement,
                         Path(args.decision_key), passphrase)
    print(f"DECISION: wrote {terminal(out)} ({statement['predicate']['verificationResult']}, valid until "
          f"{statement['predicate'][attestation.EXTENSION]['validUntil']})")


def _today(args: argparse.Namespace) -> date:
    return args.at or trust.utc_now().date()


def _check_decision(path: Path, sig_keys: list[keyring.TrustedKey], args: argparse.Namespace) -> int:
    policy = validity.load_policy(getattr(args, "releases", None))
    checked = decision.check(path, sig_keys, today=_today(args),
                             expiring_within_days=policy.expiring_within_days if policy else 0,
                             revocations=_revocations(args, sig_keys))
    if not checked.ok:
        print(f"REFUSED: {terminal(path)}: {checked.refusal}")
        return Exit.BELOW_TIER
    print(f"DECISION {checked.result}: {checked.summary()}")
    return 0


def _verify_decision(args: argparse.Namespace) -> int:
    return _check_decision(Path(args.decision), [keyring.key_from_file(Path(args.key))], args)


def _revoke_reports(args: argparse.Namespace) -> int:
    passphrase = keys.passphrase_from_env(args.passphrase_env)
    out, count = report_revocation.sign_list(Path(args.list), Path(args.key), Path(args.out), passphrase,
                                             overwrite=args.force)
    print(f"wrote {terminal(out)} ({count} revoked report(s), signed)")
    return 0


def _date(text: str) -> date:
    """argparse type for --at: an ISO date (YYYY-MM-DD)."""
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a date YYYY-MM-DD, got {terminal(text, limit=40)!r}") from None


def _tolerance(text: str) -> float:
    """argparse type for --tolerance: a finite fraction >= 0 (nan, inf and negatives are errors)."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0 (e.g. 0.1), got {terminal(text, limit=40)!r}")
    return value


def _decision_readers(args: argparse.Namespace, sign: review.DecisionSigning | None) -> list[keyring.TrustedKey]:
    """The SIG's key that review reads --decisions with (their times are the SIG's receipts,
    signing/receipts.py): the public half of --decision-key, else --sig-key."""
    if sign is not None:
        return [keyring.trusted_key(keys.load_private_key(sign.key, sign.passphrase).public_key(), "sig")]
    if getattr(args, "sig_key", None):
        return [keyring.key_from_file(Path(args.sig_key))]
    raise UserError("review: --decisions DIR is read with the SIG's key (its decisions date when the SIG received "
                    "each report): pass --decision-key SIG_KEY or --sig-key SIG_PUB", field="--sig-key")


def _review(args: argparse.Namespace) -> int:
    sign = None
    if args.decision_key:
        if not args.decisions:
            raise UserError("review: --decision-key needs --decisions DIR (where the decisions go)", field="--decisions")
        if not args.keyring:
            raise UserError("review: --decision-key needs --keyring FILE (the SIG decides only on what it verified)",
                            field="--keyring")
        sign = review.DecisionSigning(Path(args.decision_key), keys.passphrase_from_env(args.passphrase_env),
                                      Path(args.decisions))
    received = receipts.read(Path(args.decisions), _decision_readers(args, sign)) if args.decisions else None
    rows = review.review_folder(Path(args.dir), _trusted(args), releases_file=args.releases,
                                timeout_s=args.submission_timeout, revocations=_revocations(args),
                                today=_today(args), decisions=sign, received=received)
    failed = 1 if any(r.signature.startswith("error:") or r.revoked for r in rows) else 0
    if args.format == "html":  # a folder of pages, not one table on stdout
        from conformance.signing.dashboard import write_site
        index = write_site(Path(args.dir), rows, args.out, timeout_s=args.submission_timeout)
        print(f"wrote {index} ({len(rows)} submission(s))")
        return failed
    print(review.render(rows, args.format))
    return failed


NEW_RUNS = "--new-runs"   # what `diff OLD... -- NEW...`'s `--` becomes before argparse (which drops it)


def split_diff_runs(argv: Sequence[str]) -> list[str]:
    """`diff OLD... -- NEW...`: argparse drops a bare `--`, so the first one after the diff command
    becomes NEW_RUNS, which starts NEW's list."""
    argv = list(argv)
    command = next((i for i, a in enumerate(argv) if not a.startswith("-")), None)
    if command is None or argv[command] != "diff" or "--" not in argv[command:]:
        return argv
    at = argv.index("--", command)
    return argv[:at] + [NEW_RUNS] + argv[at + 1:]


def _alpha(text: str) -> float:
    """argparse type for --alpha: a significance level strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number between 0 and 1 (e.g. 0.05), got {terminal(text, limit=40)!r}")
    return value


def _diff(args: argparse.Namespace) -> int:
    if args.new_runs is None:
        if len(args.old) != 2:
            raise UserError(f"diff: expected OLD NEW, or OLD... -- NEW... for several runs of each side; got "
                            f"{len(args.old)} report(s) and no --")
        old_paths, new_paths = args.old[:1], args.old[1:]
    else:
        old_paths, new_paths = args.old, args.new_runs
    revocations = _revocations(args)
    if revocations is not None:
        for label, paths in (("OLD", old_paths), ("NEW", new_paths)):
            for given in map(Path, paths):
                file = given / attestation.REPORT_JSON if given.is_dir() else given
                listed = revocations.find(sha256_bytes(attestation.read_file(file, label)))
                if listed:
                    raise UserError(f"diff: {label} {file}: {report_revocation.refusal(listed)}")
    olds = [diff.load_report(Path(p), "OLD") for p in old_paths]
    news = [diff.load_report(Path(p), "NEW") for p in new_paths]
    tolerance = diff.choose_tolerance(args.tolerance, len(olds), len(news))
    findings = diff.diff_runs(olds, news, load_suite_data(), tolerance, alpha=args.alpha,
                              allow_different_product=args.allow_different_product)
    print(diff.render(findings, args.format, " ".join(old_paths), " ".join(new_paths), tolerance, args.alpha))
    return diff.exit_code(findings, fail_unconfirmed=args.fail_unconfirmed)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add keygen, sign, verify, verify-decision, revoke-reports, review and diff to an argparse subparsers object."""
    p = subparsers.add_parser("keygen", allow_abbrev=False, help="create a signing key pair",
                              description="Write conformance.key (0600) and conformance.pub into DIR; "
                                          "never overwrites.")
    p.add_argument("--out", required=True, metavar="DIR", help="directory for the key pair (created if missing)")
    p.add_argument("--algorithm", choices=keys.ALGORITHMS, default=keys.DEFAULT_ALGORITHM,
                   help="ecdsa-p256 (default; cosign-compatible) or ed25519")
    _passphrase_options(p, "encrypt the private key with the passphrase in $VAR")
    p.set_defaults(func=_keygen)

    p = subparsers.add_parser("sign", allow_abbrev=False, help="sign a report folder (writes report.intoto.json)",
                              description="Write a DSSE envelope over an in-toto test-result statement "
                                          "covering report.json, junit.xml and report.md.")
    p.add_argument("report_dir", metavar="REPORT_DIR")
    p.add_argument("--key", required=True, metavar="KEY", help="PEM private key (from keygen)")
    _passphrase_options(p, "read the key's passphrase from $VAR")
    p.add_argument("--force", action="store_true", help="replace an existing report.intoto.json")
    p.add_argument("--allow-insecure-key-mode", action="store_true",
                   help="sign even though the private key file is readable by group or others")
    p.add_argument("--releases", type=Path, default=None, metavar="FILE",
                   help="releases file naming the report's release (default: tiers/releases.yaml)")
    p.set_defaults(func=_sign)

    p = subparsers.add_parser("verify", help="verify a signed report",
                              description="Check signature, subject digests, schema, release digests, the "
                                          "recomputed tier, completeness and waivers. Exit 0 only if all pass. "
                                          "Given a SIG decision file and --key SIG_PUB, checks it as verify-decision does.")
    p.add_argument("path", metavar="DIR_OR_ENVELOPE")
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--key", metavar="PUB", help="trusted PEM public key")
    who.add_argument("--keyring", metavar="FILE", help="YAML keyring of trusted keys (docs/signing.md)")
    p.add_argument("--releases", type=Path, default=None, metavar="FILE",
                   help="releases file (default: tiers/releases.yaml)")
    p.add_argument("--at", type=_date, default=None, metavar="DATE",
                   help="judge waivers and the Ray window as of DATE (YYYY-MM-DD): does the certificate still hold?")
    _revocation_options(p)
    p.add_argument("--decision-key", metavar="SIG_KEY",
                   help="sign the SIG's decision (a SLSA VSA) with this private key (docs/signing.md#decisions)")
    p.add_argument("--decision-out", metavar="FILE",
                   help=f"where the decision goes (default: {decision.DECISION_NAME} beside the envelope; never overwritten)")
    _passphrase_options(p, "read the decision key's passphrase from $VAR")
    p.set_defaults(func=_verify)

    p = subparsers.add_parser("verify-decision", help="check a SIG decision offline with the SIG's public key",
                              description="Check a decision (decision.intoto.json) with the SIG's public key alone: "
                                          "signature, statement, revocation, validity. Prints tier, capabilities "
                                          "and validity; exit 0 only for a PASSED decision that holds today (or --at).")
    p.add_argument("decision", metavar="DECISION")
    p.add_argument("--key", required=True, metavar="SIG_PUB", help="the SIG's PEM public key")
    p.add_argument("--revocations", metavar="FILE", help="the SIG's signed list of revoked reports")
    p.add_argument("--at", type=_date, default=None, metavar="DATE", help="judge validity as of DATE (YYYY-MM-DD)")
    p.add_argument("--releases", type=Path, default=None, metavar="FILE",
                   help="releases file whose certificates block says when a certificate is expiring (default: tiers/releases.yaml)")
    p.set_defaults(func=_verify_decision)

    p = subparsers.add_parser("revoke-reports", help="sign the SIG's list of revoked reports",
                              description="Sign LIST (YAML: revoked: [{report_sha256, reason, date}]) with the SIG's "
                                          "key into a DSSE envelope that verify, verify-decision, review and diff "
                                          "read with --revocations.")
    p.add_argument("list", metavar="LIST")
    p.add_argument("--key", required=True, metavar="SIG_KEY", help="the SIG's PEM private key")
    p.add_argument("--out", required=True, metavar="FILE", help="the signed list (never overwritten without --force)")
    p.add_argument("--force", action="store_true", help="replace an existing signed list")
    _passphrase_options(p, "read the key's passphrase from $VAR")
    p.set_defaults(func=_revoke_reports)

    p = subparsers.add_parser("review", help="table of submissions for SIG review",
                              description="One row per sub-folder of DIR: vendor, product, suite, date, claimed "
                                          "and recomputed tier, signature status, failing and waived checks.")
    p.add_argument("dir", metavar="DIR")
    p.add_argument("--keyring", metavar="FILE", help="verify signatures (without it: 'unverified')")
    p.add_argument("--format", choices=(*review.FORMATS, "html"), default="text")
    p.add_argument("--out", type=Path, default=Path("reports/review"), metavar="DIR",
                   help="with --format html: folder for index.html and the submissions' pages (default reports/review)")
    p.add_argument("--releases", type=Path, default=None, metavar="FILE",
                   help="releases file (default: tiers/releases.yaml)")
    p.add_argument("--submission-timeout", type=cli_numbers.seconds, default=None, metavar="S",
                   help="seconds one submission's review (its page included) may take before it becomes a "
                        "'took too long' row (default: submission.timeout_s of tiers/review.yaml)")
    p.add_argument("--at", type=_date, default=None, metavar="DATE",
                   help="show validity (valid / expiring / expired) as of DATE (YYYY-MM-DD; default today)")
    _revocation_options(p)
    p.add_argument("--decision-key", metavar="SIG_KEY", help="sign the SIG's decision on each verified or rejected submission")
    p.add_argument("--decisions", type=Path, default=None, metavar="DIR",
                   help="folder for the decisions (<submission>.decision.intoto.json; an existing one is kept); "
                        "each decision's time is when the SIG received its report: a product's history follows "
                        "them and a report dated before one received earlier is marked RE-DATED? (read with "
                        "--decision-key's public half, else --sig-key)")
    _passphrase_options(p, "read the decision key's passphrase from $VAR")
    p.set_defaults(func=_review)

    p = subparsers.add_parser("diff", help="the plugin's regressions between runs (exit 1 on any)",
                              usage="%(prog)s [options] OLD NEW | OLD... -- NEW...",
                              description="Compare OLD and NEW (report folders or report.json files), or several "
                                          "runs of each side: OLD... -- NEW.... Regressions: the tier or a "
                                          "capability down, checks that stopped passing or disappeared, and "
                                          "the plugin's figures of merit (the checklist's merit:) worse beyond "
                                          "the tolerance and beyond the runs' own spread (a bootstrap "
                                          "bound on the trials; docs/ci.md). References that moved are reported "
                                          "as the host's, and so is a figure no same-run reference "
                                          "normalises that moved within the host's change. Exit 0: no regression; 1: regressions; 2: unreadable "
                                          "input, or reports of a different vendor, product or release (unless "
                                          "--allow-different-product); 3 (with --fail-unconfirmed): no regression "
                                          "confirmed, but a figure with no spread to test it (one run a side) got "
                                          "worse beyond the tolerance and the host's change: UNCONFIRMED, give "
                                          "each side two runs.")
    p.add_argument("old", metavar="OLD", nargs="+", help="OLD NEW, or OLD's runs when NEW's follow a --")
    p.add_argument(NEW_RUNS, dest="new_runs", metavar="NEW", nargs="+", help=argparse.SUPPRESS)
    p.add_argument("--tolerance", type=_tolerance, default=None,
                   help=f"allowed relative worsening of a figure of merit, a fraction. Default: "
                        f"{merit_diff.ONE_RUN_TOLERANCE:g} with one run on either side (how far honest runs drift "
                        f"apart; a figure worse by more than {merit_diff.DEFAULT_TOLERANCE:g} is listed UNCONFIRMED), "
                        f"{merit_diff.DEFAULT_TOLERANCE:g} with two runs or more on both sides (docs/ci.md). "
                        "A given value is used as it is, one run a side too; the output says which was used")
    p.add_argument("--alpha", type=_alpha, default=merit_diff.DEFAULT_ALPHA,
                   help=f"1 - the confidence of the bootstrap bound on the trials (default {merit_diff.DEFAULT_ALPHA:g})")
    p.add_argument("--format", choices=diff.FORMATS, default="text")
    p.add_argument("--allow-different-product", action="store_true",
                   help="compare reports of different vendors, products or suite releases (refused by default)")
    p.add_argument("--fail-unconfirmed", action="store_true",
                   help="exit 3 when no regression is confirmed but a figure with no spread to test it (one run a "
                        "side) got worse beyond the tolerance and the host's change (UNCONFIRMED; printed either way)")
    _revocation_options(p)
    p.set_defaults(func=_diff)


def _revocation_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--revocations", metavar="FILE",
                   help="the SIG's signed list of revoked reports (revoke-reports); a report on it is refused")
    p.add_argument("--sig-key", metavar="PUB", help="the SIG's public key, which must have signed --revocations")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ray-conformance", description="Signed conformance reports.")
    register(parser.add_subparsers(dest="command", required=True))
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Standalone entry point with the project's error convention (one line, exit 2)."""
    args = build_parser().parse_args(split_diff_runs(sys.argv[1:] if argv is None else argv))
    try:
        return int(args.func(args))
    except UserError as exc:
        print(f"error: {terminal(exc)}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
