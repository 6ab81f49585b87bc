"""`/metrics` over HTTPS with client-certificate authentication and a cipher-suite list, over real TLS on 127.0.0.1."""

from __future__ import annotations

import asyncio
import logging
import socket
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from knuma.local.apiserver.tls import Certificate, certificate_authority, signed_by
from knuma.serving.ciphersuites import GO_TO_OPENSSL, TLS13_NAMES, CipherSuiteError, parse_cipher_suites
from knuma.serving.http import SimpleHTTPServer
from knuma.serving.tls import ServingCertificate
from tests.serving.test_http import write_pair

METRICS = b"# HELP knuma_exporter_updates_total\n"
NO_CERTIFICATE = "PEER_DID_NOT_RETURN_A_CERTIFICATE"
UNKNOWN_CA = "CERTIFICATE_VERIFY_FAILED"

# crypto/tls's constants (cipher_suites.go): the IANA code points the Go names stand for.
GO_IDS = {
    "TLS_RSA_WITH_RC4_128_SHA": 0x0005,
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": 0x000A,
    "TLS_RSA_WITH_AES_128_CBC_SHA": 0x002F,
    "TLS_RSA_WITH_AES_256_CBC_SHA": 0x0035,
    "TLS_RSA_WITH_AES_128_CBC_SHA256": 0x003C,
    "TLS_RSA_WITH_AES_128_GCM_SHA256": 0x009C,
    "TLS_RSA_WITH_AES_256_GCM_SHA384": 0x009D,
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": 0xC007,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": 0xC009,
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": 0xC00A,
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": 0xC011,
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": 0xC012,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": 0xC013,
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": 0xC014,
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": 0xC023,
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": 0xC027,
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": 0xC02B,
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": 0xC02C,
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": 0xC02F,
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": 0xC030,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": 0xCCA9,
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": 0xCCA8,
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": 0xCCA9,
}
GONE_FROM_OPENSSL3 = {name for name in GO_IDS if "RC4" in name or "3DES" in name}


@pytest.fixture(scope="module")
def cluster_ca() -> Certificate:
    return certificate_authority("cluster-ca")


@pytest.fixture(scope="module")
def other_ca() -> Certificate:
    return certificate_authority("someone-else")


@pytest.fixture(scope="module")
def serving(cluster_ca: Certificate) -> Certificate:
    return signed_by(cluster_ca, ["localhost", "127.0.0.1"], common_name="exporter")


@asynccontextmanager
async def https(certificate: ServingCertificate) -> AsyncIterator[int]:
    server = SimpleHTTPServer({"/metrics": lambda: (200, "text/plain", METRICS)}, tls=certificate.context)
    port = await server.start("127.0.0.1", 0)
    try:
        yield port
    finally:
        await server.stop()


def client_context(
    trust: Certificate,
    identity: Certificate | None = None,
    tmp: Path | None = None,
    *,
    maximum: ssl.TLSVersion | None = None,
    ciphers: str | None = None,
) -> ssl.SSLContext:
    context = ssl.create_default_context(cadata=trust.cert_pem)
    if identity is not None:
        assert tmp is not None
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / "client.crt").write_text(identity.cert_pem)
        (tmp / "client.key").write_text(identity.key_pem)
        context.load_cert_chain(tmp / "client.crt", tmp / "client.key")
    if maximum is not None:
        context.maximum_version = maximum
    if ciphers is not None:
        context.set_ciphers(ciphers)
    return context


def _get(port: int, context: ssl.SSLContext) -> tuple[bytes, tuple[str, str, int] | None]:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(b"GET /metrics HTTP/1.1\r\nHost: localhost\r\n\r\n")
        data = b""
        while chunk := tls.recv(65536):
            data += chunk
        return data, tls.cipher()


async def get(port: int, context: ssl.SSLContext) -> tuple[bytes, tuple[str, str, int] | None]:
    """GET /metrics with a blocking client in a thread (the server runs on this loop): the response and the suite
    negotiated (`SSLSocket.cipher()`)."""
    return await asyncio.to_thread(_get, port, context)


async def refused(port: int, context: ssl.SSLContext, caplog: pytest.LogCaptureFixture) -> str:
    """Why the server refused the handshake (its log), after checking the client got no response.

    The client sees a failed handshake with TLS 1.2; with TLS 1.3 its side of the handshake is over before the server
    judges its certificate, so it sees the connection closed instead of a response. asyncio closes the connection
    without sending OpenSSL's alert, so the reason is only in the server's log, at info level with the client's
    address."""
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="knuma.serving.http"):
        try:
            response, _ = await get(port, context)
        except (ssl.SSLError, ConnectionError):
            response = b""
    assert response == b""
    failures = [r.getMessage() for r in caplog.records if r.name == "knuma.serving.http"]
    assert len(failures) == 1, failures
    assert failures[0].startswith("TLS handshake failed: refused 127.0.0.1:"), failures[0]
    return failures[0]


def mutual(tmp_path: Path, serving: Certificate, ca: Certificate | None) -> ServingCertificate:
    write_pair(tmp_path, serving)
    ca_file = None
    if ca is not None:
        ca_file = tmp_path / "client-ca.crt"
        ca_file.write_text(ca.cert_pem)
    return ServingCertificate.from_flags(
        str(tmp_path), "tls.crt", "tls.key", want_client_auth=True, client_ca_file=str(ca_file) if ca_file else None
    )


async def test_client_certificate_required_and_verified(
    tmp_path: Path,
    cluster_ca: Certificate,
    other_ca: Certificate,
    serving: Certificate,
    caplog: pytest.LogCaptureFixture,
) -> None:
    certificate = mutual(tmp_path, serving, cluster_ca)
    scraper = signed_by(cluster_ca, [], common_name="prometheus", client=True)
    stranger = signed_by(other_ca, [], common_name="prometheus", client=True)
    async with https(certificate) as port:
        response, _ = await get(port, client_context(cluster_ca, scraper, tmp_path))
        assert response.startswith(b"HTTP/1.1 200 OK\r\n") and response.endswith(METRICS)

        assert NO_CERTIFICATE in await refused(port, client_context(cluster_ca), caplog)
        assert UNKNOWN_CA in await refused(port, client_context(cluster_ca, stranger, tmp_path), caplog)
        # TLS 1.2: the refusal ends the handshake itself
        no_cert_12 = client_context(cluster_ca, maximum=ssl.TLSVersion.TLSv1_2)
        assert NO_CERTIFICATE in await refused(port, no_cert_12, caplog)
        # a certificate for servers only (no clientAuth usage) is not a client certificate
        server_only = signed_by(cluster_ca, ["scraper"], common_name="scraper")
        assert "unsuitable certificate purpose" in await refused(
            port, client_context(cluster_ca, server_only, tmp_path), caplog
        )


async def test_without_want_cli_auth_no_client_certificate_is_asked(
    tmp_path: Path, cluster_ca: Certificate, serving: Certificate
) -> None:
    write_pair(tmp_path, serving)
    certificate = ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key")
    async with https(certificate) as port:
        assert (await get(port, client_context(cluster_ca)))[0].startswith(b"HTTP/1.1 200 ")


async def test_client_ca_file_is_reloaded_when_it_changes(
    tmp_path: Path,
    cluster_ca: Certificate,
    other_ca: Certificate,
    serving: Certificate,
    caplog: pytest.LogCaptureFixture,
) -> None:
    certificate = mutual(tmp_path, serving, cluster_ca)
    ours = client_context(cluster_ca, signed_by(cluster_ca, [], common_name="a", client=True), tmp_path / "a")
    theirs = client_context(cluster_ca, signed_by(other_ca, [], common_name="b", client=True), tmp_path / "b")
    async with https(certificate) as port:
        assert (await get(port, ours))[0].startswith(b"HTTP/1.1 200 ")
        assert UNKNOWN_CA in await refused(port, theirs, caplog)

        (tmp_path / "client-ca.crt").write_text(other_ca.cert_pem + cluster_ca.cert_pem + "\n")  # bundle grows
        assert (await get(port, theirs))[0].startswith(b"HTTP/1.1 200 ")
        assert (await get(port, ours))[0].startswith(b"HTTP/1.1 200 ")
        assert certificate.loads == 2

        (tmp_path / "client-ca.crt").write_text("not a certificate\n")  # broken: the previous bundle stays
        with caplog.at_level(logging.WARNING, logger="knuma.exporter.tls"):
            assert (await get(port, theirs))[0].startswith(b"HTTP/1.1 200 ")
        assert "cannot load the /metrics client CA file" in caplog.text

        (tmp_path / "client-ca.crt").write_text(other_ca.cert_pem)  # our CA dropped
        assert UNKNOWN_CA in await refused(port, ours, caplog)
        assert (await get(port, theirs))[0].startswith(b"HTTP/1.1 200 ")


async def test_without_a_client_ca_file_the_system_roots_are_trusted(
    tmp_path: Path,
    cluster_ca: Certificate,
    other_ca: Certificate,
    serving: Certificate,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """As Go with a nil `ClientCAs`: OpenSSL's default verify paths, which `SSL_CERT_FILE` points elsewhere."""
    roots = tmp_path / "system-roots.pem"
    roots.write_text(other_ca.cert_pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(roots))
    monkeypatch.setenv("SSL_CERT_DIR", str(tmp_path / "no-such-dir"))
    certificate = mutual(tmp_path, serving, None)
    async with https(certificate) as port:
        system = signed_by(other_ca, [], common_name="a", client=True)
        assert (await get(port, client_context(cluster_ca, system, tmp_path / "a")))[0].startswith(b"HTTP/1.1 200 ")
        cluster = signed_by(cluster_ca, [], common_name="b", client=True)
        assert UNKNOWN_CA in await refused(port, client_context(cluster_ca, cluster, tmp_path / "b"), caplog)


def test_client_ca_file_errors(tmp_path: Path, serving: Certificate) -> None:
    from knuma.serving.tls import TLSConfigError

    write_pair(tmp_path, serving)
    with pytest.raises(TLSConfigError, match=f"client CA file {tmp_path}/ca.crt does not exist"):
        ServingCertificate.from_flags(
            str(tmp_path), "tls.crt", "tls.key", want_client_auth=True, client_ca_file=str(tmp_path / "ca.crt")
        )
    (tmp_path / "ca.crt").write_text("garbage\n")
    with pytest.raises(TLSConfigError, match="cannot load the /metrics client CA file"):
        ServingCertificate.from_flags(
            str(tmp_path), "tls.crt", "tls.key", want_client_auth=True, client_ca_file=str(tmp_path / "ca.crt")
        )


# -- cipher suites ---------------------------------------------------------------------------------------------------

AES128 = "ECDHE-ECDSA-AES128-GCM-SHA256"
AES256 = "ECDHE-ECDSA-AES256-GCM-SHA384"


def suites(tmp_path: Path, serving: Certificate, names: str, minimum: str = "VersionTLS12") -> ServingCertificate:
    write_pair(tmp_path, serving)
    return ServingCertificate.from_flags(str(tmp_path), "tls.crt", "tls.key", minimum, names)


async def test_cipher_suites_restrict_what_tls12_negotiates(
    tmp_path: Path, cluster_ca: Certificate, serving: Certificate, caplog: pytest.LogCaptureFixture
) -> None:
    tls12 = ssl.TLSVersion.TLSv1_2
    only_256 = client_context(cluster_ca, maximum=tls12, ciphers=AES256)
    both = client_context(cluster_ca, maximum=tls12, ciphers=f"{AES256}:{AES128}")
    async with https(suites(tmp_path, serving, "")) as port:  # control: the default list has AES-256
        assert (await get(port, only_256))[1] == (AES256, "TLSv1.2", 256)

    listed = suites(tmp_path, serving, " TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 , TLS_AES_128_GCM_SHA256,")
    async with https(listed) as port:
        assert "NO_SHARED_CIPHER" in await refused(port, only_256, caplog)
        response, cipher = await get(port, both)
        assert response.startswith(b"HTTP/1.1 200 ") and cipher == (AES128, "TLSv1.2", 128)
        # TLS 1.3 suites are not configurable, in Go as here: a TLS 1.3 client is unaffected
        cipher = (await get(port, client_context(cluster_ca)))[1]
        assert cipher is not None and cipher[1] == "TLSv1.3"


async def test_with_tls13_minimum_the_list_is_ignored_and_logged(
    tmp_path: Path, cluster_ca: Certificate, serving: Certificate, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.INFO, logger="knuma.exporter.tls"):
        certificate = suites(tmp_path, serving, "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "VersionTLS13")
    assert "TLS 1.3 uses fixed cipher suites; ignoring the 1 configured cipher suites" in caplog.text
    async with https(certificate) as port:
        cipher = (await get(port, client_context(cluster_ca)))[1]
        assert cipher is not None and cipher[1] == "TLSv1.3"
        tls12 = client_context(cluster_ca, maximum=ssl.TLSVersion.TLSv1_2, ciphers=AES128)
        assert "UNSUPPORTED_PROTOCOL" in await refused(port, tls12, caplog)


async def test_only_tls13_names_leave_tls12_no_suite(
    tmp_path: Path, cluster_ca: Certificate, serving: Certificate, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="knuma.exporter.tls"):
        certificate = suites(tmp_path, serving, "TLS_AES_128_GCM_SHA256,TLS_AES_256_GCM_SHA384")
    assert "accepts TLS 1.3 only" in caplog.text
    async with https(certificate) as port:
        assert (await get(port, client_context(cluster_ca)))[0].startswith(b"HTTP/1.1 200 ")
        tls12 = client_context(cluster_ca, maximum=ssl.TLSVersion.TLSv1_2)
        assert "UNSUPPORTED_PROTOCOL" in await refused(port, tls12, caplog)


def test_the_table_maps_go_names_to_the_same_code_points() -> None:
    """Each OpenSSL name in the table is the suite with the Go constant's IANA code point, as this OpenSSL says."""
    assert set(GO_TO_OPENSSL) == set(GO_IDS)
    assert {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"} == TLS13_NAMES
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    probe.set_ciphers("ALL:@SECLEVEL=0")
    offered = {cipher["name"]: cipher["id"] & 0xFFFF for cipher in probe.get_ciphers()}
    for go_name, openssl_name in GO_TO_OPENSSL.items():
        if go_name in GONE_FROM_OPENSSL3 and ssl.OPENSSL_VERSION_INFO >= (3,):
            assert openssl_name not in offered
            continue
        assert offered[openssl_name] == GO_IDS[go_name], go_name


def test_bad_cipher_suite_names() -> None:
    with pytest.raises(CipherSuiteError, match="unknown --metrics-tls-cipher-suites name 'TLS_FOO'"):
        parse_cipher_suites("TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_FOO")
    with pytest.raises(CipherSuiteError, match="'ECDHE-ECDSA-AES128-GCM-SHA256'"):  # an OpenSSL name is not Go's
        parse_cipher_suites("ECDHE-ECDSA-AES128-GCM-SHA256")
    with pytest.raises(CipherSuiteError, match=r"\(names are case-sensitive\)"):
        parse_cipher_suites("tls_ecdhe_ecdsa_with_aes_128_gcm_sha256")
    if ssl.OPENSSL_VERSION_INFO >= (3,):
        with pytest.raises(
            CipherSuiteError,
            match=r"--metrics-tls-cipher-suites name 'TLS_RSA_WITH_RC4_128_SHA' \(OpenSSL RC4-SHA\) is not available",
        ):
            parse_cipher_suites("TLS_RSA_WITH_RC4_128_SHA")
    parsed = parse_cipher_suites("TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305,TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256")
    assert parsed.openssl == ("ECDHE-RSA-CHACHA20-POLY1305",)
    assert parse_cipher_suites(" , ").names == ()
