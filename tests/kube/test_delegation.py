"""`knuma.kube.delegation.certificate_user`: upstream's `x509.CommonNameUserConversion` on the certificates `ssl`
decodes, read from real certificates a real TLS handshake verified."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path
from typing import Any

from knuma.api.userinfo import UserInfo
from knuma.kube.delegation import certificate_user
from knuma.serving.certificates import Certificate, certificate_authority, self_signed, signed_by


def _pair(cert: Certificate, directory: Path, name: str) -> tuple[Path, Path]:
    crt, key = directory / f"{name}.crt", directory / f"{name}.key"
    crt.write_text(cert.cert_pem)
    key.write_text(cert.key_pem)
    return crt, key


def _peer_as_server_sees_it(client: Certificate, ca: Certificate, tmp_path: Path) -> dict[str, Any] | None:
    """Handshake over loopback with a server that asks for a client certificate signed by `ca` (CERT_OPTIONAL, as the
    secure port) and return what `getpeercert()` gives the server."""
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(*_pair(self_signed(["127.0.0.1"]), tmp_path, "server"))
    server.verify_mode = ssl.CERT_OPTIONAL
    server.load_verify_locations(cadata=ca.cert_pem)
    customer = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    customer.check_hostname = False
    customer.verify_mode = ssl.CERT_NONE
    customer.load_cert_chain(*_pair(client, tmp_path, "client"))
    seen: list[dict[str, Any] | None] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]

        def accept() -> None:
            conn, _ = listener.accept()
            with server.wrap_socket(conn, server_side=True) as tls:
                seen.append(tls.getpeercert())

        thread = threading.Thread(target=accept, daemon=True)
        thread.start()
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, customer.wrap_socket(raw):
            thread.join(10)
    return seen[0]


def test_cn_is_the_user_and_each_o_a_group_in_certificate_order(tmp_path: Path) -> None:
    ca = certificate_authority("clients")
    client = signed_by(ca, [], common_name="prometheus", client=True, organizations=("system:monitoring", "ops"))
    peer = _peer_as_server_sees_it(client, ca, tmp_path)
    assert certificate_user(peer) == UserInfo("prometheus", "", ("system:monitoring", "ops"))


def test_no_certificate_or_no_common_name_authenticates_nobody() -> None:
    assert certificate_user(None) is None
    assert certificate_user({}) is None  # a certificate OpenSSL did not verify decodes as {}
    assert certificate_user({"subject": ((("organizationName", "system:masters"),),)}) is None
    first = {"subject": ((("commonName", "first"),), (("commonName", "second"),))}
    assert certificate_user(first) == UserInfo("first", "", ())
