"""The `api` component: the NodeResourceTopology CRD, generated from knuma's models (`knuma.api.crd`)."""

from __future__ import annotations

from knuma.api.crd import nrt_crd
from knuma.deploy.objects import Manifest, labels
from knuma.deploy.options import DeployOptions

__all__ = ["render_api"]


def render_api(options: DeployOptions) -> list[Manifest]:
    crd = nrt_crd()
    crd["metadata"]["labels"] = labels("api", "noderesourcetopology")
    return [crd]
