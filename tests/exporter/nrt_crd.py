"""The NodeResourceTopology CRD for tests (defined in `knuma.api.crd`)."""

from knuma.api.crd import NRT_CRD

__all__ = ["NRT_CRD"]
