"""The device area's judges: each check's recorded evidence + the release's params -> its outcome.

The checklist names a check's judge (`judge: <function name>`); the live check decides with it
(CheckContext.decide) and `verify` decides again with it (conformance/report/judges.py says the
rules every judge keeps). Pure: no Ray, no clock, no I/O.
"""
from __future__ import annotations

from conformance.report.judges import JudgeTable

JUDGES = JudgeTable()

