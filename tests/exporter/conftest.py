from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

from .sysfs_trees import unpack_fixture


@pytest.fixture(scope="session")
def xeon_sysfs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The real two-socket Xeon L5640 sysfs snapshot, unpacked once per session."""
    return unpack_fixture(tmp_path_factory.mktemp("xeon"))


@pytest.fixture(scope="session")
def api() -> Iterator[RunningApiServer]:
    """A `knuma apiserver` (in a thread) with the NodeResourceTopology CRD installed, shared by the session;
    tests use distinct node names."""
    from lightkube import Client, KubeConfig
    from lightkube.resources.apiextensions_v1 import CustomResourceDefinition

    from knuma.api.crd import nrt_crd

    with apiserver_in_thread() as server:
        client = Client(KubeConfig.from_file(server.kubeconfig), trust_env=False)
        crd: Any = CustomResourceDefinition.from_dict(nrt_crd())
        client.create(crd)
        client.close()
        yield server
