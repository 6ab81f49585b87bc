"""The one exception root: every error knuma raises on purpose is a `KnumaError`.

The tree is small on purpose. A caller that only needs to know "knuma refused or failed, and said why" catches
`KnumaError`; the command line maps the branches to exit statuses in one place (`knuma.cli.errors`):

- `InvalidInput` (also a `ValueError`): what the user gave is wrong -- a flag, a file, a spec, a quantity. The message
  says what is wrong and what to do. The CLI exits 2.
  - `ConfigError`: a configuration document (scheduler or exporter configuration, kubelet settings).
  - `SpecError`: a spec document (a cluster spec, a NUMAResources spec).
- `OperationFailed` (also a `RuntimeError`): something outside knuma -- the API server, the kubelet, sysfs, a
  subprocess -- failed or refused. The CLI exits 1.

Specific errors keep their own class (e.g. `knuma.duration.DurationError`, `knuma.kube.client.KubeConfigError`) and
derive from one of these, so `except ValueError` at existing call sites keeps working. API errors of `knuma.kube`
(not found, conflict, gone, forbidden, unavailable) derive from `KnumaError` too.

Pure: no imports of any other knuma module, so every layer may raise these.
"""

from __future__ import annotations

__all__ = ["ConfigError", "InvalidInput", "KnumaError", "OperationFailed", "SpecError"]


class KnumaError(Exception):
    """Root of every error knuma raises on purpose; `str(err)` is a complete message for the user."""


class InvalidInput(KnumaError, ValueError):
    """The input is wrong (flags, files, specs, quantities); the message says what and how to fix it."""


class ConfigError(InvalidInput):
    """A configuration document or setting is invalid; the message names the field and the expected value."""


class SpecError(InvalidInput):
    """A spec document (cluster spec, NUMAResources spec) is invalid; the message names the field."""


class OperationFailed(KnumaError, RuntimeError):
    """Something outside knuma (API server, kubelet, sysfs, a child process) failed or refused the operation."""
