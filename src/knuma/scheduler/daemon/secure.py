"""The scheduler's secure port: `/metrics`, `/healthz`, `/readyz`, `/livez` over HTTPS with delegated authentication
and authorization, as kube-scheduler serves them on 10259.

Defaults and flags follow `cmd/kube-scheduler/app/options/options.go` (`NewOptions`): `--secure-port` 10259 (0 turns
HTTPS off), `--bind-address` 0.0.0.0, the serving certificate from `--tls-cert-file` / `--tls-private-key-file`, else
a self-signed one written once to `--cert-dir` (pair name `kube-scheduler`), else, with neither, generated in memory
at every start (`SecureServingOptions.MaybeDefaultWithSelfSignedCerts`); `AlwaysAllowPaths` `/healthz`, `/readyz`,
`/livez` so the kubelet's probes need no token. Certificate files are reloaded when they change (`ServingCertificate`,
as `dynamiccertificates.DynamicServingCertificateController` does upstream).

Who may read what is the API server's call (`knuma.kube.delegation`): a request without a token is
`system:anonymous` (403 unless RBAC grants it the path), a token the API server does not know is 401, a user the
`SubjectAccessReview` denies is 403. Errors are `Status` objects, as kube-scheduler writes them.

`--client-ca-file` (`DelegatingAuthenticationOptions.ClientCert`) adds client certificates: the port asks for one
and lets clients without one through (upstream sets `tls.RequestClientCert` in `SecureServingInfo.tlsConfig`), and a
certificate signed by that CA authenticates its subject's CN as the user, its O values as the groups, before any
token. Unlike upstream, which verifies the certificate in the authenticator and answers 401, a certificate the CA did
not sign fails the TLS handshake (OpenSSL verifies what it asks for). The bundle is reloaded when the file changes,
as `dynamiccertificates.DynamicFileCAContent` does.
"""

from __future__ import annotations

import ipaddress
import json
import os
import ssl
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from knuma.kube.delegation import DEFAULT_ALWAYS_ALLOW_PATHS, DelegatedAuth, certificate_user
from knuma.serving.certificates import self_signed
from knuma.serving.ciphersuites import CipherSuites
from knuma.serving.http import Gate, PeerCertificate, Response
from knuma.serving.tls import ServingCertificate, TLSConfigError

__all__ = ["SecureServing", "check_cert_dir", "check_serving", "serving_context", "status_gate"]

PAIR_NAME = "kube-scheduler"


@dataclass(frozen=True)
class SecureServing:
    """The secure port's flags, kube-scheduler's names and defaults."""

    port: int = 10259
    bind_address: str = "0.0.0.0"
    tls_cert_file: str = ""
    tls_private_key_file: str = ""
    cert_dir: str = ""
    token_cache_ttl: float = 10.0
    authorized_cache_ttl: float = 10.0
    unauthorized_cache_ttl: float = 10.0
    always_allow_paths: tuple[str, ...] = DEFAULT_ALWAYS_ALLOW_PATHS
    tls_min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    """`--tls-min-version` (kube-scheduler's `SecureServingOptions.MinTLSVersion`; Go's server default is TLS 1.2)."""
    tls_cipher_suites: CipherSuites = field(default_factory=lambda: CipherSuites((), ()))
    """`--tls-cipher-suites` (`SecureServingOptions.CipherSuites`, Go names; empty: OpenSSL's defaults)."""
    client_ca_file: str = ""
    """`--client-ca-file`: PEM bundle of the CAs whose client certificates authenticate (empty: tokens only)."""


def _hosts(bind_address: str) -> list[str]:
    hosts = ["localhost", "127.0.0.1", "::1"]
    if bind_address not in ("", "0.0.0.0", "::"):
        hosts.append(bind_address)
    return hosts


_CERT_DIR_HINT = "or pass --tls-cert-file and --tls-private-key-file"


def check_cert_dir(cert_dir: str) -> None:
    """`--cert-dir` is created when missing; one that exists, and its parents, must be directories (a
    `TLSConfigError` naming it), so that `--check-config` refuses what the start would."""
    if not cert_dir:
        return
    path = Path(cert_dir)
    existing = next((p for p in (path, *path.parents) if p.exists()), None)
    if existing is not None and not existing.is_dir():
        which = "" if existing == path else f" ({existing} is a file)"
        raise TLSConfigError(
            f"--cert-dir {cert_dir} is not a directory{which}: give a directory for the secure port's self-signed "
            f"certificate (it is created when missing), {_CERT_DIR_HINT}"
        )


def _in_cert_dir(directory: Path, bind_address: str) -> tuple[Path, Path]:
    check_cert_dir(str(directory))
    cert_path, key_path = directory / f"{PAIR_NAME}.crt", directory / f"{PAIR_NAME}.key"
    if not (cert_path.is_file() and key_path.is_file()):
        cert = self_signed(_hosts(bind_address), common_name=f"localhost@{int(time.time())}", days=365)
        try:
            directory.mkdir(parents=True, exist_ok=True)
            fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as out:
                out.write(cert.key_pem)
            cert_path.write_text(cert.cert_pem)
        except OSError as err:
            raise TLSConfigError(
                f"cannot write the secure port's self-signed certificate into --cert-dir {directory}: "
                f"{err.strerror or err}; give a directory the scheduler can write, {_CERT_DIR_HINT}"
            ) from None
    return cert_path, key_path


def serving_context(settings: SecureServing) -> tuple[Callable[[], ssl.SSLContext], str]:
    """The TLS context provider of the secure port and where its certificate comes from (for the log). Raises
    `TLSConfigError` naming the flag at fault."""
    if bool(settings.tls_cert_file) != bool(settings.tls_private_key_file):
        raise TLSConfigError("--tls-cert-file and --tls-private-key-file go together: give both or neither")
    options = _serving_options(settings)
    if settings.tls_cert_file:
        cert = ServingCertificate(settings.tls_cert_file, settings.tls_private_key_file, **options)
        return cert.context, f"certificate {settings.tls_cert_file} (reloaded when it changes)"
    if settings.cert_dir:
        cert_path, key_path = _in_cert_dir(Path(settings.cert_dir), settings.bind_address)
        cert = ServingCertificate(cert_path, key_path, **options)
        return cert.context, f"self-signed certificate {cert_path}"
    pair = self_signed(_hosts(settings.bind_address), common_name=f"localhost@{int(time.time())}", days=365)
    return ServingCertificate.in_memory(pair, **options).context, "a self-signed certificate generated in memory"


def check_serving(settings: SecureServing) -> None:
    """Everything the secure port's start would refuse, checked without writing anything (for `--check-config`, and
    first thing at start): `--bind-address` is an IP address (kube-scheduler's flag is a `net.IP`), and with the port
    on, the certificate pair and `--client-ca-file` load and `--cert-dir` can be a directory. Raises
    `TLSConfigError` naming the flag."""
    if settings.bind_address:
        try:
            ipaddress.ip_address(settings.bind_address)
        except ValueError:
            raise TLSConfigError(
                f"invalid --bind-address {settings.bind_address!r}: not an IP address (0.0.0.0 listens on every "
                "IPv4 interface, :: on every interface)"
            ) from None
    if not settings.port:
        return
    if bool(settings.tls_cert_file) != bool(settings.tls_private_key_file):
        raise TLSConfigError("--tls-cert-file and --tls-private-key-file go together: give both or neither")
    options = _serving_options(settings)
    if settings.tls_cert_file:
        ServingCertificate(settings.tls_cert_file, settings.tls_private_key_file, **options)
        return
    check_cert_dir(settings.cert_dir)
    if settings.client_ca_file:  # the bundle loads into any context: try it with a throwaway pair
        pair = self_signed(["localhost"], common_name="check", days=1)
        ServingCertificate.in_memory(pair, **options)


def _serving_options(settings: SecureServing) -> dict[str, Any]:
    """`ServingCertificate`'s options from the flags, whichever certificate is served; with `--client-ca-file`,
    client certificates are asked for (not required) and checked against that bundle, reloaded when it changes."""
    options: dict[str, Any] = {
        "purpose": "secure port",
        "hint": "pass --tls-cert-file and --tls-private-key-file, or neither for a self-signed certificate",
        "min_version": settings.tls_min_version,
        "cipher_suites": settings.tls_cipher_suites,
    }
    if settings.client_ca_file:
        options.update(
            client_auth=True,
            client_cert_optional=True,
            client_ca_file=settings.client_ca_file,
            client_ca_hint="or drop --client-ca-file to authenticate by token only",
        )
    return options


def _status(code: int, message: str) -> Response:
    reason = {401: "Unauthorized", 403: "Forbidden"}.get(code, "InternalError")
    body = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": message,
        "reason": reason,
        "details": {},
        "code": code,
    }
    return code, "application/json", (json.dumps(body) + "\n").encode()


def status_gate(auth: DelegatedAuth) -> Gate:
    """The secure port's gate: `auth`'s refusals as `Status` responses."""

    async def gate(method: str, path: str, headers: Mapping[str, str], peer: PeerCertificate | None) -> Response | None:
        refused = await auth.check(method, path, headers.get("authorization", ""), certificate_user(peer))
        return None if refused is None else _status(refused.status, refused.message)

    return gate
