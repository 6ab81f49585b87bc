"""lightkube clients from `--kubeconfig` / `--context`, in-cluster config, or `~/.kube/config`, with clear errors.

Every knuma component that reaches an API server builds its client here, so that the same flags mean the same thing
everywhere and a bad kubeconfig is reported the same way (what is wrong and what to do), never as a traceback.
`lightkube_errors()` turns what a lightkube call raises into the same typed errors as the raw request path
(`knuma.kube.rest`), so callers handle one set of errors whichever client they use.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from lightkube import AsyncClient, Client, KubeConfig
from lightkube.config.kubeconfig import SingleConfig
from lightkube.core.exceptions import ApiError as LightkubeApiError
from lightkube.core.exceptions import ConfigError

import knuma.errors as knuma_errors
from knuma.kube.errors import KubeApiError, Unavailable, connection_failure, from_status
from knuma.kube.session import ApiSession
from knuma.manifests import UnreadableFile, YamlProblem, read_user_file, yaml_document

__all__ = [
    "KubeConfigError",
    "api_session",
    "async_client",
    "async_http",
    "http_client",
    "lightkube_errors",
    "load_config",
    "merged_kubeconfig",
    "sync_client",
    "transport_error",
]

DEFAULT_TIMEOUT = 10.0


class KubeConfigError(knuma_errors.ConfigError):
    """The cluster connection cannot be configured; the message says which file or context and what to do."""


def load_config(kubeconfig: str | os.PathLike[str] | None = None, context: str | None = None) -> SingleConfig:
    """The connection settings: `kubeconfig` if given, else `$KUBECONFIG` (a list of files, as kubectl reads it:
    `merged_kubeconfig`), else in-cluster, else `~/.kube/config`."""
    path = kubeconfig or os.environ.get("KUBECONFIG") or None
    try:
        if path and not kubeconfig and os.pathsep in str(path):
            config = merged_kubeconfig([Path(p).expanduser() for p in str(path).split(os.pathsep) if p])
        elif path:
            file = Path(path).expanduser()
            if not file.is_file():
                # A stale `export KUBECONFIG=...` (a stopped `knuma up` removes its temporary kubeconfig) is the
                # usual cause: say where the path came from, so the user knows what to change.
                if kubeconfig:
                    raise KubeConfigError(f"kubeconfig {file} does not exist; pass --kubeconfig with an existing file")
                raise KubeConfigError(
                    f"kubeconfig {file} (from $KUBECONFIG) does not exist; fix $KUBECONFIG or pass --kubeconfig "
                    "with an existing file (a `knuma up` without --data-dir removes its kubeconfig when it stops)"
                )
            config = _kubeconfig_file(file)
        else:
            config = _in_cluster_or_default()
    except KubeConfigError:
        raise
    except ConfigError as err:
        raise KubeConfigError(
            f"no cluster configuration: {err}; pass --kubeconfig FILE or set $KUBECONFIG (`knuma up` and `knuma "
            "apiserver` print the path of theirs), or run inside a pod with a service account"
        ) from err
    except Exception as err:  # malformed YAML or a kubeconfig lightkube cannot read
        raise KubeConfigError(f"cannot read kubeconfig {path or '~/.kube/config'}: {err}") from err
    try:
        single = config.get(context_name=context)
    except (ConfigError, KeyError) as err:
        known = ", ".join(sorted(config.contexts)) or "none"
        wanted = f"no context {context!r}" if context else "no current-context"
        raise KubeConfigError(f"kubeconfig has {wanted} (contexts: {known}); pick one with --context") from err
    assert single is not None  # no default given: lightkube raises rather than returning None
    return single


def async_client(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    field_manager: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    namespace: str | None = None,
) -> AsyncClient:
    return AsyncClient(
        config=load_config(kubeconfig, context),
        field_manager=field_manager,
        timeout=httpx2.Timeout(timeout),
        trust_env=False,
        namespace=namespace,
    )


def sync_client(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    field_manager: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    namespace: str | None = None,
) -> Client:
    return Client(
        config=load_config(kubeconfig, context),
        field_manager=field_manager,
        timeout=httpx2.Timeout(timeout),
        trust_env=False,
        namespace=namespace,
    )


def async_http(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
) -> httpx2.AsyncClient:
    """A raw HTTP client (base URL, TLS and credentials from the kubeconfig) for the hot paths that want plain JSON:
    informers streaming watch lines, and binding pods, where decoding into typed models would only cost time."""
    from lightkube.config.client_adapter import AsyncClient as adapter_client
    from lightkube.config.client_adapter import ConnectionParams

    params = ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False)
    return adapter_client(load_config(kubeconfig, context), params)


def api_session(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    limit: int = 32,
) -> ApiSession:
    """The same connection as `async_http` (base URL, TLS, credentials) as an `ApiSession`: at most `limit`
    keep-alive connections and a quarter of the client CPU per request, for the scheduler's bindings and events."""
    from lightkube.config.client_adapter import user_auth, verify_cluster

    config = load_config(kubeconfig, context)
    if config.user is None:  # lightkube's own clients refuse such a context too
        raise KubeConfigError(f"kubeconfig context {config.context_name!r} names no user; add one or pick --context")
    ssl_context = verify_cluster(config.cluster, config.user, config.abs_file, trust_env=False)
    try:
        auth = user_auth(config.user)
    except ConfigError as err:
        raise KubeConfigError(f"cannot authenticate with the kubeconfig's user: {err}") from err
    return ApiSession(config.cluster.server, ssl_context=ssl_context, auth=auth, timeout=timeout, limit=limit)


_LOCAL_PATHS = {"cluster": ("certificate-authority",), "user": ("client-certificate", "client-key", "tokenFile")}


def _kubeconfig_file(file: Path) -> KubeConfig:
    """One kubeconfig file, read as UTF-8 always (a file that is not says which byte, not Python's codec)."""
    try:
        text = read_user_file(file)
    except UnreadableFile as err:
        raise KubeConfigError(f"cannot read kubeconfig {file}: {err.reason}") from None
    return KubeConfig.from_dict(_kubeconfig_document(text, file), fname=file)


def _in_cluster_or_default() -> KubeConfig:
    """No --kubeconfig and no $KUBECONFIG (unset or empty, which kubectl takes as unset): the pod's service account,
    else `~/.kube/config` (lightkube's `KubeConfig.from_env` order, without its reading of an empty $KUBECONFIG as a
    file named "")."""
    try:
        return KubeConfig.from_service_account()
    except ConfigError:
        pass
    default = Path("~/.kube/config").expanduser()
    if not default.is_file():
        raise ConfigError("Configuration file ~/.kube/config not found")
    return _kubeconfig_file(default)


def _kubeconfig_document(text: str, file: Path) -> dict[str, Any]:
    """A kubeconfig's YAML, checked for what lightkube reads without saying what is missing (`'clusters'`)."""
    try:
        loaded = yaml_document(text)
    except YamlProblem as err:
        raise KubeConfigError(f"cannot read kubeconfig {file}: {err}") from None
    if not isinstance(loaded, dict):
        raise KubeConfigError(
            f"kubeconfig {file} is not a kubeconfig: expected a mapping with clusters, contexts and users, got "
            f"{type(loaded).__name__ if loaded is not None else 'an empty file'}"
        )
    for key in ("clusters", "contexts", "users"):
        if not isinstance(loaded.get(key) or [], list):
            raise KubeConfigError(f"kubeconfig {file}: {key} must be a list")
    if not loaded.get("clusters"):
        raise KubeConfigError(
            f"kubeconfig {file} has no clusters; write one with `kubectl config set-cluster` or use the kubeconfig "
            "`knuma up` or `knuma apiserver` wrote"
        )
    return loaded


def merged_kubeconfig(files: list[Path]) -> KubeConfig:
    """A `$KUBECONFIG` list as kubectl loads it (`clientcmd.ClientConfigLoadingRules.Load`): the files that exist,
    merged in order, the first to name a cluster, user or context (or set `current-context`) winning; relative file
    paths in each are resolved against its own directory first (`ResolveLocalPaths`)."""
    merged: dict[str, object] = {"clusters": [], "users": [], "contexts": []}
    seen: dict[str, set[str]] = {"clusters": set(), "users": set(), "contexts": set()}
    found = [f for f in files if f.is_file()]
    if not found:
        listed = ", ".join(str(f) for f in files)
        raise KubeConfigError(
            f"none of the kubeconfig files in $KUBECONFIG exists ({listed}); fix $KUBECONFIG or pass --kubeconfig"
        )
    for file in found:
        try:
            loaded = yaml_document(read_user_file(file)) or {}
        except UnreadableFile as err:
            raise KubeConfigError(f"cannot read kubeconfig {file} (from $KUBECONFIG): {err.reason}") from None
        except YamlProblem as err:
            raise KubeConfigError(f"cannot read kubeconfig {file} (from $KUBECONFIG): {err}") from None
        if not isinstance(loaded, dict):
            raise KubeConfigError(f"kubeconfig {file} (from $KUBECONFIG) is not a mapping")
        if loaded.get("current-context") and "current-context" not in merged:
            merged["current-context"] = loaded["current-context"]
        for section in ("clusters", "users", "contexts"):
            for entry in loaded.get(section) or []:
                name = str((entry or {}).get("name") or "")
                if not name or name in seen[section]:
                    continue
                seen[section].add(name)
                body = entry.get(section[:-1])
                if isinstance(body, dict):
                    body = dict(body)
                    for key in _LOCAL_PATHS.get(section[:-1], ()):
                        value = body.get(key)
                        if isinstance(value, str) and value and not Path(value).expanduser().is_absolute():
                            body[key] = str(file.parent / value)
                    entry = {**entry, section[:-1]: body}
                merged[section].append(entry)  # type: ignore[attr-defined]
    return KubeConfig.from_dict(merged, fname=found[0])


def http_client(
    kubeconfig: str | os.PathLike[str] | None = None,
    context: str | None = None,
    *,
    timeout: float = DEFAULT_TIMEOUT,
    config: SingleConfig | None = None,
) -> httpx2.Client:
    """A plain synchronous HTTP client with the cluster's base URL, TLS and credentials, for the paths lightkube has
    no model for (`/version`, discovery, the node proxy)."""
    from lightkube.config.client_adapter import Client as adapter_client
    from lightkube.config.client_adapter import ConnectionParams

    params = ConnectionParams(timeout=httpx2.Timeout(timeout), trust_env=False)
    return adapter_client(config or load_config(kubeconfig, context), params)


@contextlib.contextmanager
def lightkube_errors() -> Iterator[None]:
    """Around lightkube calls (sync or async): its `ApiError` becomes the `knuma.kube.errors` class for the status
    (`Conflict`, `NotFound`, ...), a failed connection `Unavailable` without status, any other HTTP failure (a body
    that cannot be decoded) a `KubeApiError` without status."""
    try:
        yield
    except LightkubeApiError as err:
        status = err.status
        code = status.code or err.response.status_code
        body = err.response.json() if err.response.content else {}
        raise from_status(
            err.request.method,
            str(err.request.url),
            code,
            status.message or "",
            reason=status.reason or "",
            body=body if isinstance(body, dict) else None,
        ) from err
    except httpx2.HTTPError as err:
        raise transport_error(err) from err


def transport_error(err: httpx2.HTTPError) -> KubeApiError:
    """An HTTP client failure without an answer as `knuma.kube.errors` says it: `Unavailable` naming the server and
    the reason (`cannot reach the API server at https://127.0.0.1:1234 (GET /api/v1/nodes): connection refused`)
    for a failed connection, a `KubeApiError` without status for the rest."""
    request = getattr(err, "_request", None)  # `err.request` raises when the error has none
    method, url = (request.method, str(request.url)) if request is not None else ("?", "?")
    if isinstance(err, httpx2.TransportError):
        return Unavailable(method, url, None, connection_failure(err))
    return KubeApiError(method, url, None, f"{type(err).__name__}: {err}")
