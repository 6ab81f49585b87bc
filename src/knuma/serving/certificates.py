"""Self-signed and CA-signed certificates generated in pure Python (ECDSA P-256), so a server can speak HTTPS without
an extra dependency.

The key is a P-256 scalar, the certificate is DER written by hand and signed with ECDSA/SHA-256; Python's `ssl` loads
the resulting PEM files like any others. `knuma apiserver` uses `self_signed` for its serving certificate and
`knuma scheduler` for the in-memory certificate of its secure port when no `--tls-cert-file` is given (as
kube-scheduler's `SecureServingOptions.MaybeDefaultWithSelfSignedCerts` does with `certutil.GenerateSelfSignedCertKey`).
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import secrets
import ssl
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

# -- P-256 ------------------------------------------------------------------------------------------------------------

_P = 0xFFFFFFFF00000001000000000000000000000000FFFFFFFFFFFFFFFFFFFFFFFF
_A = _P - 3
_N = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
_G = (
    0x6B17D1F2E12C4247F8BCE6E563A440F277037D812DEB33A0F4A13945D898C296,
    0x4FE342E2FE1A7F9B8EE7EB4A7C0F9E162BCE33576B315ECECBB6406837BF51F5,
)
Point = tuple[int, int] | None


def _add(p1: Point, p2: Point) -> Point:
    if p1 is None:
        return p2
    if p2 is None:
        return p1
    (x1, y1), (x2, y2) = p1, p2
    if x1 == x2 and (y1 + y2) % _P == 0:
        return None
    slope = (3 * x1 * x1 + _A, 2 * y1) if p1 == p2 else (y2 - y1, x2 - x1)
    lam = slope[0] * pow(slope[1], -1, _P) % _P
    x3 = (lam * lam - x1 - x2) % _P
    return (x3, (lam * (x1 - x3) - y1) % _P)


def _mul(k: int, point: Point) -> Point:
    result: Point = None
    addend = point
    while k:
        if k & 1:
            result = _add(result, addend)
        addend = _add(addend, addend)
        k >>= 1
    return result


def _sign(d: int, message: bytes) -> tuple[int, int]:
    z = int.from_bytes(hashlib.sha256(message).digest(), "big")
    while True:
        k = secrets.randbelow(_N - 1) + 1
        point = _mul(k, _G)
        assert point is not None
        r = point[0] % _N
        s = pow(k, -1, _N) * (z + r * d) % _N
        if r and s:
            return r, s


# -- DER --------------------------------------------------------------------------------------------------------------


def _tlv(tag: int, body: bytes) -> bytes:
    n = len(body)
    if n < 0x80:
        length = bytes([n])
    else:
        raw = n.to_bytes((n.bit_length() + 7) // 8, "big")
        length = bytes([0x80 | len(raw)]) + raw
    return bytes([tag]) + length + body


def _seq(*items: bytes) -> bytes:
    return _tlv(0x30, b"".join(items))


def _int(value: int) -> bytes:
    raw = value.to_bytes(value.bit_length() // 8 + 1, "big")
    return _tlv(0x02, raw)


def _oid(dotted: str) -> bytes:
    parts = [int(p) for p in dotted.split(".")]
    body = bytes([40 * parts[0] + parts[1]])
    for part in parts[2:]:
        chunk = [part & 0x7F]
        part >>= 7
        while part:
            chunk.insert(0, 0x80 | (part & 0x7F))
            part >>= 7
        body += bytes(chunk)
    return _tlv(0x06, body)


def _bits(data: bytes, unused: int = 0) -> bytes:
    return _tlv(0x03, bytes([unused]) + data)


def _time(moment: datetime) -> bytes:
    if moment.year < 2050:
        return _tlv(0x17, moment.strftime("%y%m%d%H%M%SZ").encode())
    return _tlv(0x18, moment.strftime("%Y%m%d%H%M%SZ").encode())


def _name(common_name: str, organizations: Sequence[str] = ()) -> bytes:
    """A subject name: one RDN per organization (O), then the common name (CN), as kubeadm writes
    `O=system:masters, CN=kubernetes-admin`."""
    rdns = [_tlv(0x31, _seq(_oid("2.5.4.10"), _tlv(0x0C, org.encode()))) for org in organizations]
    return _seq(*rdns, _tlv(0x31, _seq(_oid("2.5.4.3"), _tlv(0x0C, common_name.encode()))))


def _ext(oid: str, value: bytes, *, critical: bool = False) -> bytes:
    flag = _tlv(0x01, b"\xff") if critical else b""
    return _seq(_oid(oid), flag, _tlv(0x04, value))


def _pem(label: str, der: bytes) -> str:
    text = base64.encodebytes(der).decode().replace("\n", "")
    lines = [text[i : i + 64] for i in range(0, len(text), 64)]
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n"


@dataclass(frozen=True)
class Certificate:
    cert_pem: str
    key_pem: str


def self_signed(hosts: list[str], *, common_name: str = "knuma-apiserver", days: int = 3650) -> Certificate:
    """A certificate valid for `hosts` (DNS names or IP addresses), signed by its own key."""
    return _issue(hosts, common_name, days, issuer=None, usages=("1.3.6.1.5.5.7.3.1",))


def certificate_authority(common_name: str, *, days: int = 3650) -> Certificate:
    """A self-signed CA for `signed_by`, without extendedKeyUsage, so it may sign server and client certificates
    (OpenSSL checks a CA's extendedKeyUsage against the purpose of the certificates it signed)."""
    return _issue([], common_name, days, issuer=None, usages=())


def signed_by(
    issuer: Certificate,
    hosts: list[str],
    *,
    common_name: str,
    client: bool = False,
    organizations: Sequence[str] = (),
    days: int = 3650,
) -> Certificate:
    """A leaf certificate signed by `issuer` (from `certificate_authority`): for a server (`hosts` in its
    subjectAltName) or, with `client`, for TLS client authentication (extendedKeyUsage clientAuth; `hosts` may be
    empty). `organizations`: the subject's O values, which Kubernetes reads as the client's groups."""
    usages = ("1.3.6.1.5.5.7.3.2",) if client else ("1.3.6.1.5.5.7.3.1",)
    return _issue(hosts, common_name, days, issuer=issuer, usages=usages, organizations=organizations)


def _children(der: bytes) -> list[bytes]:
    """The TLV items inside the DER SEQUENCE `der` (each with its tag and length)."""
    body_at = 2 if der[1] < 0x80 else 2 + (der[1] & 0x7F)
    items, pos = [], body_at
    while pos < len(der):
        size, head = der[pos + 1], 2
        if size >= 0x80:
            head = 2 + (size & 0x7F)
            size = int.from_bytes(der[pos + 2 : pos + head], "big")
        items.append(der[pos : pos + head + size])
        pos += head + size
    return items


def _issuer_of(issuer: Certificate) -> tuple[int, bytes, bytes]:
    """The signing key, subject name (DER) and key identifier of a certificate this module wrote."""
    key = _children(ssl.PEM_cert_to_DER_cert(issuer.key_pem.replace("EC PRIVATE KEY", "CERTIFICATE")))
    d = int.from_bytes(key[1][2:], "big")
    tbs = _children(_children(ssl.PEM_cert_to_DER_cert(issuer.cert_pem))[0])
    point = _children(tbs[6])[1][3:]  # subjectPublicKeyInfo's BIT STRING: tag, length, unused-bits byte
    return d, tbs[5], hashlib.sha1(point).digest()


def _issue(
    hosts: list[str],
    common_name: str,
    days: int,
    *,
    issuer: Certificate | None,
    usages: tuple[str, ...],
    organizations: Sequence[str] = (),
) -> Certificate:
    d = secrets.randbelow(_N - 1) + 1
    public = _mul(d, _G)
    assert public is not None
    point = b"\x04" + public[0].to_bytes(32, "big") + public[1].to_bytes(32, "big")
    ec_alg = _seq(_oid("1.2.840.10045.2.1"), _oid("1.2.840.10045.3.1.7"))
    spki = _seq(ec_alg, _bits(point))
    key_id = hashlib.sha1(point).digest()
    if issuer is None:
        signer, issuer_name, issuer_key_id = d, _name(common_name), key_id
        constraints, key_usage = _seq(_tlv(0x01, b"\xff")), _bits(b"\x84", 2)  # CA; digitalSignature, keyCertSign
    else:
        signer, issuer_name, issuer_key_id = _issuer_of(issuer)
        constraints, key_usage = _seq(), _bits(b"\x80", 7)  # not a CA; digitalSignature
    sans = b""
    for host in dict.fromkeys(hosts):
        try:
            sans += _tlv(0x87, ipaddress.ip_address(host).packed)
        except ValueError:
            sans += _tlv(0x82, host.encode())
    extensions = _seq(
        _ext("2.5.29.19", constraints, critical=True),
        _ext("2.5.29.15", key_usage, critical=True),
        *([_ext("2.5.29.37", _seq(*(_oid(usage) for usage in usages)))] if usages else []),
        *([_ext("2.5.29.17", _seq(sans))] if sans else []),
        _ext("2.5.29.14", _tlv(0x04, key_id)),
        _ext("2.5.29.35", _seq(_tlv(0x80, issuer_key_id))),
    )
    now = datetime.now(UTC).replace(microsecond=0)
    sig_alg = _seq(_oid("1.2.840.10045.4.3.2"))
    tbs = _seq(
        _tlv(0xA0, _int(2)),
        _int(secrets.randbits(63) | 1),
        sig_alg,
        issuer_name,
        _seq(_time(now - timedelta(hours=1)), _time(now + timedelta(days=days))),
        _name(common_name, organizations),
        spki,
        _tlv(0xA3, extensions),
    )
    r, s = _sign(signer, tbs)
    cert = _seq(tbs, sig_alg, _bits(_seq(_int(r), _int(s))))
    key = _seq(
        _int(1), _tlv(0x04, d.to_bytes(32, "big")), _tlv(0xA0, _oid("1.2.840.10045.3.1.7")), _tlv(0xA1, _bits(point))
    )
    return Certificate(_pem("CERTIFICATE", cert), _pem("EC PRIVATE KEY", key))
