"""Whose stall a TR-019 wave's stall is: the same wave through the suite's reference transport
(conformance.areas.transport.reference_wave) decides it, and the reason says what it did."""
from __future__ import annotations

from conformance.areas.transport.reference_wave import NAME, ReferenceWave, describe, whose_stall

BASE = ReferenceWave(transport=NAME, transfers=100, actors=4, bound_s=20.0)


def test_a_reference_that_finished_leaves_the_stall_to_the_plugin() -> None:
    done = ReferenceWave(**{**BASE.as_dict(), "took_s": 4.3, "pending": 0})
    assert whose_stall(done) == "plugin" and not done.ran_out
    assert describe(done) == ("the same wave through the suite's reference transport (100 transfers between 4 fresh "
                              "actors) finished in 4.3s of the same 20s")


def test_a_reference_that_ran_out_of_the_same_bound_makes_it_the_hosts() -> None:
    stuck = ReferenceWave(**{**BASE.as_dict(), "took_s": 20.0, "pending": 37})
    assert whose_stall(stuck) == "host" and stuck.ran_out
    assert "did not finish within the same 20s either (after 20.0s: 37 pending)" in describe(stuck)


def test_a_reference_that_could_not_run_decides_nothing() -> None:
    """No shared memory on the host, or Ray refusing the registration: the stall stays the
    plugin's, as it was before the reference existed, and the reason says why."""
    broken = ReferenceWave(**{**BASE.as_dict(), "error": "registering it failed: OSError: no /dev/shm"})
    assert whose_stall(broken) == "plugin" and not broken.ran_out
    assert describe(broken).startswith("the suite's reference transport could not run here to compare (registering")
    assert "error" in broken.as_dict() and "pending" not in broken.as_dict()


def test_transfers_ray_gave_up_on_within_the_bound_did_not_finish_either() -> None:
    """make test-load (busy loops above the suite's priority, TR-019's bound 5 s x6): the
    reference's receives ended in Ray's own RDT fetch timeout on the suite's correct transport."""
    gave_up = ReferenceWave(**{**BASE.as_dict(), "took_s": 61.0, "pending": 0, "timed_out": 100,
                               "first_timeout": "TimeoutError: ObjectRef(6c68) not found in RDT object store after 60.0s"})
    assert whose_stall(gave_up) == "host"
    assert describe(gave_up).endswith("(after 61.0s: 0 pending, 100 given up by Ray: TimeoutError: ObjectRef(6c68) "
                                      "not found in RDT object store after 60.0s)")


def test_a_reference_that_needed_most_of_the_bound_leaves_no_room_to_judge_the_plugin() -> None:
    """make test-load, TR-019's bound 5 s x6: the reference did every transfer in 175.7 s of 181.3 s
    (and in another run after 175.3 s of 155 s, a starved driver's ray.wait returning late), where
    the plugin's own wave of the same work took 171 s in a green run under the same hogs."""
    for bound, took in ((181.3, 175.739), (155.0, 175.269), (20.0, 10.5)):
        tight = ReferenceWave(**{**BASE.as_dict(), "bound_s": bound, "took_s": took, "pending": 0, "timed_out": 0})
        assert whose_stall(tight) == "host", (bound, took)
        assert f"needed {took:.1f}s of the same {bound:g}s, more than 1/2 of it" in describe(tight)
    roomy = ReferenceWave(**{**BASE.as_dict(), "took_s": 9.9, "pending": 0, "timed_out": 0})
    assert whose_stall(roomy) == "plugin"
