"""Signed conformance reports: keys, DSSE envelopes, in-toto attestations, verification,
SIG review and CI gating.

Modules, one job each:
  canonical    canonical JSON bytes (what gets signed and hashed)
  keys         key generation/loading, keyid, sign/verify primitives (via `cryptography`)
  pkcs8        passphrase-encrypted private keys with scrypt; a key file's KDF strength
  keyring      the SIG's trusted-key file
  dsse         DSSE envelope + PAE
  attestation  in-toto Statement (test-result predicate) for a report folder
  sign         `sign_report_dir`: sign a folder, refusing first what verify would refuse
  submission   the one reader of a report folder (sign and verify share it)
  trust        each report field's trust status (schemas/report.trust.yaml), enforced
  revocation   a key revoked from a date counts only for reports signed before it
  dashboard    the reviewer's pages (`review --format html`)
  verify       every check a verifier makes, each reported on its own line
  review       a table over a folder of submissions
  diff         regressions between two reports (CI gate)
Below it, shared with the catalog: conformance/identity.py (names compared NFKC-normalised; names
that print invisibly, mix scripts or look alike: the TR39 skeleton, data in conformance/unicode/)
and conformance/catalog/releases.py (released suite versions -> data-file digests).
"""
# Nothing is imported here.
