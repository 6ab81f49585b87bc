from __future__ import annotations

from pathlib import Path

import pytest

from .sysfs_trees import unpack_fixture


@pytest.fixture(scope="session")
def xeon_sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real two-socket Xeon L5640 sysfs snapshot, unpacked once per session."""
    return unpack_fixture(tmp_path_factory.mktemp("xeon"))
