"""`--metrics-tls-cipher-suites`: the Go cipher-suite names Kubernetes components accept, as OpenSSL cipher names.

resource-topology-exporter parses the flag with component-base's `cliflag.TLSCipherSuites`
(`staging/src/k8s.io/component-base/cli/flag/ciphersuites_flag.go`): a name is accepted if Go's
`crypto/tls.CipherSuites()` or `InsecureCipherSuites()` (`crypto/tls/cipher_suites.go`) lists it, plus the two legacy
ChaCha20 names without `_SHA256`; names are case-sensitive (a map lookup). Python's `ssl` speaks OpenSSL, whose
names differ (`TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256` is `ECDHE-ECDSA-AES128-GCM-SHA256`), so the table below maps
each Go name to its OpenSSL name, after the IANA/OpenSSL correspondence in OpenSSL's `openssl-ciphers(1)` manual
("TLS v1.0 cipher suites" .. "TLS v1.2 cipher suites"); both name the same IANA code point.

TLS 1.3 suites cannot be chosen in Go (`Config.CipherSuites` does not apply to TLS 1.3), so their names are accepted
and ignored, as Go does. Go still offers TLS 1.3 with any list; a list of only TLS 1.3 names leaves TLS 1.2 no suite,
which in Go fails every TLS 1.2 handshake: here that is the TLS 1.3 minimum it amounts to.

OpenSSL 3 no longer builds RC4 or 3DES into its default provider: such a name is refused at start with the OpenSSL
version, rather than silently never negotiated.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass

from knuma.errors import ConfigError

__all__ = ["GO_TO_OPENSSL", "TLS13_NAMES", "CipherSuites", "parse_cipher_suites"]

FLAG = "--metrics-tls-cipher-suites"

GO_TO_OPENSSL: dict[str, str] = {
    # crypto/tls.CipherSuites(), TLS 1.0-1.2
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    # component-base's legacy names (Go < 1.14)
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305": "ECDHE-ECDSA-CHACHA20-POLY1305",
    # crypto/tls.InsecureCipherSuites(): accepted by component-base too
    "TLS_RSA_WITH_RC4_128_SHA": "RC4-SHA",
    "TLS_RSA_WITH_3DES_EDE_CBC_SHA": "DES-CBC3-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_RC4_128_SHA": "ECDHE-ECDSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_RC4_128_SHA": "ECDHE-RSA-RC4-SHA",
    "TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA": "ECDHE-RSA-DES-CBC3-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
}
"""Go name -> OpenSSL name, for every TLS 1.0-1.2 name `cliflag.TLSCipherSuites` accepts."""

TLS13_NAMES = frozenset({"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"})
"""Go's TLS 1.3 suites: accepted, never configurable."""


class CipherSuiteError(ConfigError):
    """A cipher-suite name Go does not know, or one this OpenSSL cannot offer."""


@dataclass(frozen=True)
class CipherSuites:
    """A parsed `--metrics-tls-cipher-suites`."""

    names: tuple[str, ...]
    """The Go names as given (empty: OpenSSL's defaults)."""
    openssl: tuple[str, ...]
    """The TLS 1.0-1.2 suites as OpenSSL names, in the given order, without duplicates."""

    @property
    def only_tls13(self) -> bool:
        """Names were given but none applies below TLS 1.3: Go then completes no TLS 1.2 handshake."""
        return bool(self.names) and not self.openssl

    def apply(self, context: ssl.SSLContext) -> None:
        """Restrict the TLS 1.2 suites `context` offers (TLS 1.3 suites are left as OpenSSL has them)."""
        if self.openssl:
            context.set_ciphers(":".join(self.openssl))


def parse_cipher_suites(text: str, flag: str = FLAG) -> CipherSuites:
    """The comma-separated Go names of `text` (blanks around names and empty items skipped, as RTE's
    `splitNonEmptyCSV`). Raises `CipherSuiteError` naming `flag` (the exporter's, or the scheduler's
    `--tls-cipher-suites`) and the value."""
    names = tuple(part.strip() for part in text.split(",") if part.strip())
    openssl: list[str] = []
    for name in names:
        if name in TLS13_NAMES:
            continue
        mapped = GO_TO_OPENSSL.get(name)
        if mapped is None:
            case = " (names are case-sensitive)" if name.upper() in GO_TO_OPENSSL or name.upper() in TLS13_NAMES else ""
            raise CipherSuiteError(
                f"unknown {flag} name {name!r}{case}: use Go crypto/tls names as Kubernetes components do, "
                "e.g. TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"
            )
        if not _available(mapped):
            raise CipherSuiteError(
                f"{flag} name {name!r} (OpenSSL {mapped}) is not available in {ssl.OPENSSL_VERSION}: "
                "remove it from the list"
            )
        if mapped not in openssl:
            openssl.append(mapped)
    return CipherSuites(names, tuple(openssl))


def _available(openssl_name: str) -> bool:
    """Whether this OpenSSL can offer the suite (RC4 and 3DES are gone from OpenSSL 3's default provider)."""
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        probe.set_ciphers(openssl_name)
    except ssl.SSLError:
        return False
    return any(cipher["name"] == openssl_name for cipher in probe.get_ciphers())
