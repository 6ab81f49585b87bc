"""The serving certificate of `knuma apiserver`: a self-signed certificate (see `knuma.serving.certificates`),
kept in the data directory so kubeconfigs stay valid across restarts.

Why TLS on loopback: kubectl (client-go) never sends a bearer token over plain `http://`, so token authentication
needs HTTPS. The certificate is its own CA (it goes into the kubeconfig as `certificate-authority-data`) and names
`localhost`, `127.0.0.1`, `::1` and the bind address.
"""

from __future__ import annotations

import ssl
from pathlib import Path

from knuma.serving.certificates import Certificate, certificate_authority, self_signed, signed_by

__all__ = ["Certificate", "certificate_authority", "load_or_create", "self_signed", "server_context", "signed_by"]


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


def server_context(cert_path: Path, key_path: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert_path, key_path)
    return context
