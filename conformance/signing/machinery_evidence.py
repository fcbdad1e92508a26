"""The run's machinery factor is one its own waits used (held-out round 25: N25_14).

verify allows a wait on Ray's machinery, TR-019's wave bound and the RDT fetch timeout to stretch
by the run's own factor (same_measurement.stretch_problems), recomputed from the record's
slowest_s over nominal_s (run_factor). But slowest_s is the vendor's figure too: an idle run
claiming a worker start of 4x its nominal had factor 4 recomputed and stretched TR-019's wave
x3.5. The factor is not free: the run measures a worker start in its preflight and again only
when a wait on Ray runs out (conformance.run.machinery.await_machinery), and every wait on Ray
after a measurement is stretched by it and records the factor it used (metrics.waits[].factor;
the wait whose fresh sample grew it records the new one). So the run's factor is at most the
largest factor its recorded waits on Ray used; a run whose checks record waits on Ray and none
used the factor claimed never measured it. A run with a host error ("not judged: host") may have
grown its factor in a wait that gave up before re-waiting (the reason names the stretch): not held.
A wait's factor counts only when its grant shows the stretch (granted_s at least bound_s times
the factor, as every wait on Ray records it): a factor written into one wait whose grant was
left as it was used nothing (held-out DF1's second form, which raised the run's factor so `diff`
would read the host as slower).

Pure: the report's checks and the run's factor in, problem lines out.
"""
from __future__ import annotations

import math

from conformance.catalog.strict_input import as_list, as_map
from conformance.report.results import HOST_PREFIX

FACTOR_ROUNDING = 0.005   # knob: factors are recorded to 2 decimals (cluster.machinery) or 3 (a wait), no threshold
GRANT_ROUNDING_S = 0.002  # knob: a wait records its seconds to 1 ms (conformance.timing.owned), no threshold


def _factor(value: object) -> float | None:
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    return None


def waits_factor(checks: object) -> tuple[float | None, bool]:
    """(the largest factor a recorded wait on Ray used, None when no wait on Ray is recorded; whether
    a check ended as the host's error, whose wait may not record the factor it grew to)."""
    most: float | None = None
    host_error = False
    for raw in as_list(checks):
        entry = as_map(raw)
        host_error |= entry.get("outcome") == "error" and str(entry.get("reason") or "").startswith(HOST_PREFIX)
        for w in as_list(as_map(as_map(entry.get("metrics")).get("waits")).get("each")):
            wait = as_map(w)
            used = _factor(wait.get("factor", 1.0))
            if wait.get("owner") == "ray" and used is not None:
                bound, granted = _factor(wait.get("bound_s")), _factor(wait.get("granted_s"))
                if used > 1.0 and (bound is None or granted is None or granted < bound * used - GRANT_ROUNDING_S):
                    used = 1.0   # a stretch its grant does not show was not used
                most = used if most is None else max(most, used)
    return most, host_error


def unmeasured_factor_problems(checks: object, factor: float) -> list[str]:
    """Why the run's factor (> 1) is none its waits on Ray used ([] when one did, or nothing can say)."""
    if factor <= 1.0 + FACTOR_ROUNDING:
        return []
    most, host_error = waits_factor(checks)
    if most is None or host_error or factor <= max(1.0, most) + FACTOR_ROUNDING:
        return []
    return [f"cluster.machinery gives a factor of x{factor:g}, but the largest its recorded waits on Ray's machinery used "
            f"is x{most:g}: the run measures its machinery in the preflight and when a wait runs out, and every wait "
            "after a measurement is stretched by it"]
