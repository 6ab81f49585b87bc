from __future__ import annotations

import asyncio
import logging
import os
import ssl
from pathlib import Path

import pytest

from knuma.local.apiserver.tls import Certificate, self_signed
from knuma.serving.http import SimpleHTTPServer
from knuma.serving.tls import ServingCertificate, TLSConfigError, parse_min_version


async def request(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    writer.write_eof()
    data = await reader.read()
    writer.close()
    return data


async def test_routes_methods_and_errors() -> None:
    calls = []

    def ready() -> tuple[int, str, bytes]:
        calls.append(1)
        return 503, "text/plain", b"kubelet down\n"

    def boom() -> tuple[int, str, bytes]:
        raise RuntimeError("bug")

    server = SimpleHTTPServer({"/readyz": ready, "/boom": boom})
    port = await server.start("127.0.0.1", 0)
    try:
        response = await request(port, b"GET /readyz?verbose HTTP/1.1\r\nHost: x\r\n\r\n")
        assert response.startswith(b"HTTP/1.1 503 Service Unavailable\r\n")
        assert b"Content-Length: 13\r\n" in response
        assert response.endswith(b"\r\n\r\nkubelet down\n")
        head = await request(port, b"HEAD /readyz HTTP/1.1\r\n\r\n")
        assert head.endswith(b"\r\n\r\n")
        assert (await request(port, b"GET /nope HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 404 ")
        assert (await request(port, b"POST /readyz HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 405 ")
        assert (await request(port, b"garbage\r\n\r\n")).startswith(b"HTTP/1.1 400 ")
        assert (await request(port, b"GET /boom HTTP/1.1\r\n\r\n")).startswith(b"HTTP/1.1 500 ")
        assert await request(port, b"GET /readyz HTTP/1.1\r\n") == b""  # client gave up mid-request
        assert len(calls) == 2
    finally:
        await server.stop()


def write_pair(directory: Path, cert: Certificate) -> None:
    """As a Secret update does: new files appear whole (rename), key first."""
    for name, text in (("tls.key", cert.key_pem), ("tls.crt", cert.cert_pem)):
        tmp = directory / f".{name}.tmp"
        tmp.write_text(text)
        os.replace(tmp, directory / name)


async def fetch_tls(port: int, trust: Certificate, *, maximum: ssl.TLSVersion | None = None) -> tuple[bytes, bytes]:
    """GET /healthz over TLS trusting only `trust`; returns the response and the server's certificate (DER)."""
    context = ssl.create_default_context(cadata=trust.cert_pem)
    if maximum is not None:
        context.maximum_version = maximum
    reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost")
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
    await writer.drain()
    data = await reader.read()
    peer = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    writer.close()
    return data, peer


def der(cert: Certificate) -> bytes:
    return ssl.PEM_cert_to_DER_cert(cert.cert_pem)


async def test_tls_with_certificate_rotation(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    first, second = self_signed(["localhost", "127.0.0.1"]), self_signed(["localhost", "127.0.0.1"])
    write_pair(tmp_path, first)
    certificate = ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key")
    server = SimpleHTTPServer({"/healthz": lambda: (200, "text/plain", b"ok\n")}, tls=certificate.context)
    port = await server.start("127.0.0.1", 0)
    try:
        response, peer = await fetch_tls(port, first)
        assert response.startswith(b"HTTP/1.1 200 OK\r\n") and response.endswith(b"ok\n")
        assert peer == der(first)

        write_pair(tmp_path, second)  # rotated: the next connection gets the new certificate, no restart
        response, peer = await fetch_tls(port, second)
        assert peer == der(second)
        assert certificate.loads == 2

        (tmp_path / "tls.crt").write_text("-----BEGIN CERTIFICATE-----\nnot base64\n")  # half-written
        with caplog.at_level(logging.WARNING, logger="knuma.exporter.tls"):
            response, peer = await fetch_tls(port, second)
        assert peer == der(second)  # the previous certificate stays in use
        assert "still serving the previous certificate" in caplog.text

        # plain HTTP on the TLS port gets no answer
        assert await request(port, b"GET /healthz HTTP/1.1\r\n\r\n") == b""
    finally:
        await server.stop()


async def test_tls_minimum_version(tmp_path: Path) -> None:
    cert = self_signed(["localhost", "127.0.0.1"])
    write_pair(tmp_path, cert)
    certificate = ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key", "VersionTLS13")
    server = SimpleHTTPServer({"/healthz": lambda: (200, "text/plain", b"ok\n")}, tls=certificate.context)
    port = await server.start("127.0.0.1", 0)
    try:
        assert (await fetch_tls(port, cert))[0].startswith(b"HTTP/1.1 200 ")
        with pytest.raises((ssl.SSLError, ConnectionError)):
            await fetch_tls(port, cert, maximum=ssl.TLSVersion.TLSv1_2)
    finally:
        await server.stop()


def test_tls_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(TLSConfigError, match=f"certificate {tmp_path}/tls.crt does not exist"):
        ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key")
    write_pair(tmp_path, self_signed(["localhost"]))
    (tmp_path / "tls.key").write_text(self_signed(["localhost"]).key_pem)  # a key of another certificate
    with pytest.raises(TLSConfigError, match="cannot load the /metrics certificate"):
        ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key")
    with pytest.raises(TLSConfigError, match="VersionTLS12 or VersionTLS13"):
        parse_min_version("VersionTLS10")
