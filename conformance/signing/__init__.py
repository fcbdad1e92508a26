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
  identity     names compared NFKC-normalised; names that print invisibly, mix scripts or look
               alike (TR39 confusable skeleton, data in unicode/confusables.tsv)
  revocation   a key revoked from a date counts only for reports signed before it
  releases     released suite versions -> data-file digests (tiers/releases.yaml)
  verify       every check a verifier makes, each reported on its own line
  review       a table over a folder of submissions
  diff         regressions between two reports (CI gate)
"""
# Nothing is imported here: `python -m conformance.catalog.releases` would otherwise find its own
# module loaded before it runs (a RuntimeWarning on every `make docs`).
