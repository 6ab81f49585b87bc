"""The TLS certificate of `/metrics` (`--metrics-mode=httptls`), reloaded when its files change.

Serving certificates are short-lived and rotated in place (cert-manager, OpenShift's service-ca, a Secret update
that the kubelet propagates by swapping a symlink). The exporter checks the files' identity (inode, size, mtime) when
a connection arrives and, if either changed, loads the pair into a fresh `SSLContext`; connections from then on use
it, connections already open keep theirs. A half-written or mismatched pair (the certificate renewed before the key)
is not fatal: the previous context stays in use, a warning is logged, and the next connection tries again.

Flags and defaults as resource-topology-exporter's: `--metrics-certs-dir` (`/etc/secrets/rte`), `--metrics-cert-file`
(`tls.crt`) and `--metrics-key-file` (`tls.key`), relative to the directory unless absolute, and
`--metrics-tls-min-version` (`VersionTLS12`, Go's names, or `1.2` / `1.3`).

The policy follows RTE's `pkg/metrics/server/tls_policy.go` (`metricsTLSPolicyOpts`) and `setup.go`:
- `--metrics-tls-cipher-suites`: Go names (see `ciphersuites`) restrict the TLS 1.2 suites; with a TLS 1.3 minimum
  the list is ignored and that is logged, as `tls13PolicyOpt` does.
- `--metrics-want-cli-auth`: `WithClientAuth` sets `tls.RequireAndVerifyClientCert`, here `ssl.CERT_REQUIRED`: a
  client without a certificate, or with one no trusted CA signed, fails the handshake. RTE leaves `ClientCAs` nil, so
  Go verifies against the system roots; so does this by default (OpenSSL's default paths, `SSL_CERT_FILE` /
  `SSL_CERT_DIR`). `--metrics-client-ca-file` (a knuma addition) trusts a CA bundle instead, e.g. the cluster CA; it
  is reloaded with the pair when it changes.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
from pathlib import Path
from typing import Any

from knuma.errors import ConfigError
from knuma.serving.certificates import Certificate
from knuma.serving.ciphersuites import CipherSuites, parse_cipher_suites

__all__ = ["ServingCertificate", "TLSConfigError", "parse_min_version", "tls_policy"]

log = logging.getLogger("knuma.exporter.tls")

_VERSIONS = {
    "versiontls12": ssl.TLSVersion.TLSv1_2,
    "1.2": ssl.TLSVersion.TLSv1_2,
    "versiontls13": ssl.TLSVersion.TLSv1_3,
    "1.3": ssl.TLSVersion.TLSv1_3,
}


class TLSConfigError(ConfigError):
    """The certificate or key cannot be used; the message names the file."""


def parse_min_version(text: str, flag: str = "--metrics-tls-min-version") -> ssl.TLSVersion:
    """Go's version names (`VersionTLS12`, as component-base's `cliflag.TLSVersion`) or `1.2` / `1.3`; the error
    names `flag`."""
    try:
        return _VERSIONS[text.strip().lower()]
    except KeyError:
        raise TLSConfigError(f"unsupported {flag} {text!r}: use VersionTLS12 or VersionTLS13 (or 1.2, 1.3)") from None


def tls_policy(
    min_version: ssl.TLSVersion, cipher_suites: CipherSuites, purpose: str
) -> tuple[ssl.TLSVersion, CipherSuites]:
    """The minimum version and suites a listener really uses, as RTE's `metricsTLSPolicyOpts`: with a TLS 1.3
    minimum the list is ignored (`tls13PolicyOpt`: TLS 1.3 suites cannot be chosen), and a list of only TLS 1.3 names
    leaves TLS 1.2 no suite, which is a TLS 1.3 minimum."""
    if cipher_suites.names and min_version >= ssl.TLSVersion.TLSv1_3:
        log.info("TLS 1.3 uses fixed cipher suites; ignoring the %d configured cipher suites", len(cipher_suites.names))
        return min_version, CipherSuites((), ())
    if cipher_suites.only_tls13:
        log.warning(
            "the configured cipher suites are all TLS 1.3 suites, which cannot be chosen: no TLS 1.2 suite is "
            "left, so %s accepts TLS 1.3 only",
            purpose,
        )
        return ssl.TLSVersion.TLSv1_3, cipher_suites
    return min_version, cipher_suites


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    try:
        info = os.stat(path)  # follows symlinks: a swapped ..data link gives a new inode
    except OSError:
        return None
    return (info.st_ino, info.st_dev, info.st_size, info.st_mtime_ns)


class ServingCertificate:
    def __init__(
        self,
        cert_file: str | os.PathLike[str],
        key_file: str | os.PathLike[str],
        *,
        min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2,
        cipher_suites: CipherSuites | None = None,
        client_auth: bool = False,
        client_ca_file: str | os.PathLike[str] | None = None,
        client_cert_optional: bool = False,
        client_ca_hint: str = "or drop --metrics-client-ca-file to trust the system roots",
        purpose: str = "/metrics",
        hint: str = "pass --metrics-certs-dir / --metrics-cert-file / --metrics-key-file",
        pair: Certificate | None = None,
    ) -> None:
        self.pair = pair
        """A certificate held only in memory (`in_memory`) instead of the files; only the client CA file is then
        watched."""
        self.purpose = purpose
        """What the certificate serves, for messages (`/metrics`, `the conversion webhook`)."""
        self.hint = hint
        """What to do when the files are missing."""
        self.cert_file = Path(cert_file)
        self.key_file = Path(key_file)
        self.min_version = min_version
        self.cipher_suites = cipher_suites or CipherSuites((), ())
        self.client_auth = client_auth
        """Require a client certificate signed by a trusted CA (`ssl.CERT_REQUIRED`)."""
        self.client_ca_file = Path(client_ca_file) if client_ca_file is not None else None
        """The CAs client certificates must chain to; None: the system roots, as Go's nil `ClientCAs`."""
        self.client_cert_optional = client_cert_optional
        """With `client_auth`: ask for a client certificate but let clients without one through (`ssl.CERT_OPTIONAL`,
        for a server that also takes bearer tokens); a certificate that is given must still chain to the CAs."""
        self.client_ca_hint = client_ca_hint
        """What to do when the client CA file is missing, besides mounting it."""
        self.min_version, self.cipher_suites = tls_policy(min_version, self.cipher_suites, purpose)
        self.loads = 0
        """How many times a certificate was loaded (1 after start)."""
        self._seen = self._identities()
        self._context = self._load()  # at start a bad pair is an error: the operator must fix it

    @classmethod
    def from_flags(
        cls,
        certs_dir: str,
        cert_file: str,
        key_file: str,
        min_version: str = "VersionTLS12",
        cipher_suites: str = "",
        *,
        want_client_auth: bool = False,
        client_ca_file: str | None = None,
    ) -> ServingCertificate:
        """From the exporter's flags. Raises `TLSConfigError` or `CipherSuiteError` naming the flag at fault."""
        base = Path(certs_dir)
        return cls(
            base / cert_file,
            base / key_file,
            min_version=parse_min_version(min_version),
            cipher_suites=parse_cipher_suites(cipher_suites),
            client_auth=want_client_auth,
            client_ca_file=client_ca_file or None,
        )

    @classmethod
    def in_memory(cls, pair: Certificate, **options: Any) -> ServingCertificate:
        """Serve `pair`, which is never written anywhere lasting (`ssl` loads only files: each load goes through a
        private temporary directory removed at once); `options` as the constructor's."""
        return cls("(in memory)", "(in memory)", pair=pair, **options)

    def context(self) -> ssl.SSLContext:
        """The context for a new connection: reloaded first if the files changed since the last load."""
        current = self._identities()
        if current != self._seen:
            self._seen = current
            try:
                self._context = self._load()
                source = self.client_ca_file if self.pair is not None else self.cert_file
                log.info("reloaded the %s certificate, %s changed", self.purpose, source)
            except TLSConfigError as err:
                log.warning("%s; still serving the previous certificate", err)
        return self._context

    def _identities(self) -> tuple[tuple[int, int, int, int] | None, ...]:
        pair_files = (self.cert_file, self.key_file) if self.pair is None else ()
        files = (*pair_files, self.client_ca_file)
        return tuple(_identity(path) for path in files if path is not None)

    def _load(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        self.cipher_suites.apply(context)
        if self.pair is not None:
            with tempfile.TemporaryDirectory(prefix="knuma-tls-") as directory:
                cert_path, key_path = Path(directory, "tls.crt"), Path(directory, "tls.key")
                key_path.touch(mode=0o600)
                key_path.write_text(self.pair.key_pem)
                cert_path.write_text(self.pair.cert_pem)
                context.load_cert_chain(cert_path, key_path)
        else:
            self._load_files(context)
        if self.client_auth:
            self._trust_clients(context)
        self.loads += 1
        return context

    def _load_files(self, context: ssl.SSLContext) -> None:
        for path, what in ((self.cert_file, "certificate"), (self.key_file, "key")):
            if not path.is_file():
                raise TLSConfigError(
                    f"{self.purpose} TLS {what} {path} does not exist: mount the serving certificate Secret there, "
                    f"or {self.hint}"
                )
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (ssl.SSLError, OSError) as err:
            raise TLSConfigError(
                f"cannot load the {self.purpose} certificate {self.cert_file} with key {self.key_file}: {err}"
            ) from None

    def _trust_clients(self, context: ssl.SSLContext) -> None:
        context.verify_mode = ssl.CERT_OPTIONAL if self.client_cert_optional else ssl.CERT_REQUIRED
        if self.client_ca_file is None:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
            return
        if not self.client_ca_file.is_file():
            raise TLSConfigError(
                f"{self.purpose} client CA file {self.client_ca_file} does not exist: mount the CA bundle there, "
                f"{self.client_ca_hint}"
            )
        try:
            context.load_verify_locations(cafile=self.client_ca_file)
        except (ssl.SSLError, OSError, ValueError) as err:
            raise TLSConfigError(
                f"cannot load the {self.purpose} client CA file {self.client_ca_file} (PEM certificates expected): "
                f"{err}"
            ) from None
