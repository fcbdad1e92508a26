"""Signed conformance reports: keys, DSSE envelopes, in-toto attestations, verification,
SIG review and CI gating (issue 6).

Modules, one job each:
  canonical    canonical JSON bytes (what gets signed and hashed)
  keys         key generation/loading, keyid, sign/verify primitives (via `cryptography`)
  pkcs8        passphrase-encrypted private keys with scrypt; a key file's KDF strength
  keyring      the SIG's trusted-key file
  dsse         DSSE envelope + PAE
  attestation  in-toto Statement (test-result predicate) for a report folder; `sign_report_dir`
  releases     released suite versions -> data-file digests (tiers/releases.yaml)
  verify       every check a verifier makes, each reported on its own line
  review       a table over a folder of submissions
  diff         regressions between two reports (CI gate)
"""
from conformance.signing.sign import sign_report_dir

__all__ = ["sign_report_dir"]
