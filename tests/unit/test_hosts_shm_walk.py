"""The namespace hosts' leftover check walks /dev/shm at any depth, as the run's own audit does
(a transport staging into its own folder there left a file only a walk below the top sees)."""
from __future__ import annotations

from pathlib import Path

from conformance.cluster.hosts.cluster import _shm_entries


def test_the_hosts_leftover_walk_sees_files_below_the_top(tmp_path: Path) -> None:
    (tmp_path / "vendor" / "staging").mkdir(parents=True)
    (tmp_path / "vendor" / "staging" / "seg-1").write_bytes(b"x" * 1024)
    (tmp_path / "top").write_bytes(b"x")
    assert set(_shm_entries(str(tmp_path))) == {"top", "vendor/", "vendor/staging/", "vendor/staging/seg-1"}
