"""The suite's clusters leave Ray's "current cluster" file as the user had it
(conformance.cluster.ray_start.users_ray_address_kept): cluster_utils writes its head's address there
and deletes the file at shutdown, through these two Ray functions. Pure: no cluster starts."""
from __future__ import annotations

from pathlib import Path

import ray._common.utils as common_utils
import ray._private.utils as private_utils

from conformance.cluster.ray_start import users_ray_address_kept


def test_the_users_address_file_is_neither_replaced_nor_deleted(tmp_path: Path) -> None:
    users = common_utils.get_ray_address_file(str(tmp_path))
    Path(users).write_text("10.0.0.7:6379")           # the vendor's own cluster
    with users_ray_address_kept():
        private_utils.write_ray_address("127.0.0.1:50001", str(tmp_path))   # what a suite head writes
        assert Path(users).read_text() == "10.0.0.7:6379"
        common_utils.reset_ray_address(str(tmp_path))                      # what its shutdown does
        assert Path(users).read_text() == "10.0.0.7:6379"
    private_utils.write_ray_address("127.0.0.1:50002", str(tmp_path))       # Ray's own, restored
    assert Path(users).read_text() == "127.0.0.1:50002"
    common_utils.reset_ray_address(str(tmp_path))
    assert not Path(users).exists()
