"""The serving certificate of `knuma apiserver`: a self-signed certificate (see `knuma.serving.certificates`),
kept in the data directory so kubeconfigs stay valid across restarts.

Why TLS on loopback: kubectl (client-go) never sends a bearer token over plain `http://`, so token authentication
needs HTTPS. The certificate is its own CA (it goes into the kubeconfig as `certificate-authority-data`) and names
`localhost`, `127.0.0.1`, `::1` and the bind address.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from knuma.local.apiserver.datadir import DataDirError
from knuma.manifests import UnreadableFile, read_user_file
from knuma.serving.certificates import Certificate, certificate_authority, self_signed, signed_by

__all__ = [
    "Certificate",
    "certificate_authority",
    "load_or_create",
    "self_signed",
    "server_context",
    "serving",
    "signed_by",
]


def load_or_create(directory: Path, hosts: list[str]) -> tuple[Path, Path]:
    """Cert and key files in `directory`, created once (so kubeconfigs stay valid across restarts)."""
    directory.mkdir(parents=True, exist_ok=True)
    cert_path, key_path = directory / "serving.crt", directory / "serving.key"
    if not (cert_path.exists() and key_path.exists()):
        cert = self_signed(hosts)
        key_path.touch(mode=0o600)
        key_path.write_text(cert.key_pem)
        cert_path.touch(mode=0o600)
        cert_path.write_text(cert.cert_pem)
    return cert_path, key_path


def serving(directory: Path, hosts: list[str]) -> tuple[str, ssl.SSLContext]:
    """The certificate (PEM, the kubeconfig's CA) and the server's TLS context, from the pair in `directory` (made
    once, `load_or_create`). A pair that cannot be used (not PEM, a key that does not match) is a `DataDirError`
    naming both files: they are left as they are."""
    cert, key = load_or_create(directory, hosts)
    try:
        return read_user_file(cert), server_context(cert, key)
    except (UnreadableFile, ssl.SSLError) as err:
        reason = err.cause if isinstance(err, UnreadableFile) else f"OpenSSL cannot load them: {err}"
        raise DataDirError(
            f"cannot serve with the certificate {cert} and key {key} ({reason}): move them aside to have a new pair "
            "generated (clients given the old one then need the new kubeconfig; knuma does not delete or overwrite "
            "them), or give another --data-dir"
        ) from None


def server_context(cert_path: Path, key_path: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context
