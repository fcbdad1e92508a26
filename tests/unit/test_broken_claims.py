"""The twins that pick one process of a Ray session for their bug (broken_workload._claim) leave
nothing behind the run: the claim lives in the Ray session's own folder, never in the temp
folder (empty `conformance-stale-receiver-session_*` files piled up in /tmp)."""
from __future__ import annotations

import tempfile
from pathlib import Path
from types import SimpleNamespace

import pytest


def test_a_claim_is_kept_in_the_ray_session_folder_not_the_temp_folder(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import broken_workload
    import ray

    session, temp = tmp_path / "session_2026-01-01_00-00-00_000000_1", tmp_path / "tmp"
    session.mkdir()
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(ray._private.worker.global_worker, "node",
                        SimpleNamespace(get_session_dir_path=lambda: str(session)), raising=False)
    assert broken_workload._claim("stale-receiver") is True
    assert broken_workload._claim("stale-receiver") is False          # one process per session
    assert list(temp.iterdir()) == []
    assert [p.name for p in session.iterdir()] == ["conformance-stale-receiver"]


def test_outside_a_ray_worker_the_process_claims_alone_and_writes_nothing(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    import broken_workload
    import ray

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(ray._private.worker.global_worker, "node", None, raising=False)
    monkeypatch.setattr(broken_workload, "_CLAIMED_ALONE", set())
    assert broken_workload._claim("some-role") is True
    assert broken_workload._claim("some-role") is False
    assert list(tmp_path.iterdir()) == []
