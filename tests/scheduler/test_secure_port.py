"""`knuma scheduler --secure-port`: /metrics, /healthz, /readyz over HTTPS with authentication and authorization
delegated to a real `knuma apiserver` (TokenReview, SubjectAccessReview), as kube-scheduler serves them on 10259."""

from __future__ import annotations

import http.client
import json
import signal
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from knuma.local.apiserver import reviews
from knuma.local.apiserver.authn import UserInfo
from knuma.serving.certificates import Certificate, certificate_authority, signed_by
from knuma.testing.apiserver import RunningApiServer, apiserver_in_thread

pytestmark = pytest.mark.slow

VIEWER = UserInfo("viewer", "u-1", ("monitoring", "system:authenticated"))
ROOT = UserInfo("prometheus", "u-2", ("system:masters", "system:authenticated"))


@pytest.fixture
def api(tmp_path: Path) -> Iterator[RunningApiServer]:
    with apiserver_in_thread(tmp_path / "api", static_tokens={"viewer-token": VIEWER, "root-token": ROOT}) as running:
        yield running


@pytest.fixture
def review_counts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many reviews the (in-process) API server answered: its own review functions, counted."""
    counts = {"tokenreviews": 0, "subjectaccessreviews": 0}

    def counting(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            counts[name] += 1
            return real(*args)

        return wrapper

    monkeypatch.setattr(reviews, "review_token", counting("tokenreviews", reviews.review_token))
    monkeypatch.setattr(reviews, "review_access", counting("subjectaccessreviews", reviews.review_access))
    return counts


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Scheduler:
    def __init__(self, api: RunningApiServer, work: Path, *extra: str) -> None:
        self.port = _free_port()
        self.log = work / f"scheduler-{self.port}.log"
        args = [sys.executable, "-m", "knuma", "scheduler", "--kubeconfig", str(api.kubeconfig), "--no-leader-elect"]
        args += ["--metrics-port", "0", "--bind-address", "127.0.0.1", "--secure-port", str(self.port), *extra]
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen(args, stdout=out, stderr=out)
        deadline = time.monotonic() + 30
        while f"securely on https://127.0.0.1:{self.port}" not in self.log.read_text():
            assert self.proc.poll() is None, self.log.read_text()
            assert time.monotonic() < deadline, self.log.read_text()
            time.sleep(0.05)

    def get(self, path: str, token: str | None = None, context: ssl.SSLContext | None = None) -> tuple[int, bytes]:
        if context is None:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        conn = http.client.HTTPSConnection("127.0.0.1", self.port, timeout=10, context=context)
        try:
            conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
            reply = conn.getresponse()
            return reply.status, reply.read()
        finally:
            conn.close()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)


@pytest.fixture
def start(api: RunningApiServer, tmp_path: Path) -> Iterator[Callable[..., Scheduler]]:
    started: list[Scheduler] = []

    def run(*extra: str) -> Scheduler:
        started.append(Scheduler(api, tmp_path, *extra))
        return started[-1]

    yield run
    for scheduler in started:
        scheduler.stop()


def test_metrics_need_a_token_the_api_server_knows_and_a_user_it_authorizes(
    start: Callable[..., Scheduler], review_counts: dict[str, int]
) -> None:
    scheduler = start()
    status, body = scheduler.get("/metrics", "root-token")
    assert status == 200, body
    assert b"scheduler_pending_pods" in body

    status, body = scheduler.get("/metrics", "not-a-token")
    assert status == 401, body
    assert json.loads(body)["reason"] == "Unauthorized"

    status, body = scheduler.get("/metrics", "viewer-token")  # authenticated, but the review denies it
    assert status == 403, body
    assert json.loads(body)["message"].startswith('forbidden: User "viewer" cannot get path "/metrics"')

    # no token: system:anonymous, as kube-scheduler's delegating authenticator allows; then denied
    status, body = scheduler.get("/metrics")
    assert status == 403, body
    assert 'User "system:anonymous" cannot get path "/metrics"' in json.loads(body)["message"]
    assert review_counts == {"tokenreviews": 3, "subjectaccessreviews": 3}


def test_probe_paths_need_no_token_but_a_bad_token_still_fails(start: Callable[..., Scheduler]) -> None:
    scheduler = start()
    for path in ("/healthz", "/livez"):
        assert scheduler.get(path) == (200, b"ok\n")
    status, _ = scheduler.get("/readyz")
    assert status in (200, 503)  # authorized either way: ready once the caches synced
    assert scheduler.get("/healthz", "not-a-token")[0] == 401  # authentication runs before the path authorizer


def test_always_allow_paths_is_configurable(start: Callable[..., Scheduler]) -> None:
    scheduler = start("--authorization-always-allow-paths", "/metrics")
    assert scheduler.get("/metrics")[0] == 200
    assert scheduler.get("/healthz")[0] == 403


def test_reviews_are_cached_for_the_ttl_then_asked_again(
    start: Callable[..., Scheduler], review_counts: dict[str, int]
) -> None:
    scheduler = start(
        "--authentication-token-webhook-cache-ttl",
        "2s",
        "--authorization-webhook-cache-authorized-ttl",
        "2s",
    )
    for _ in range(5):
        assert scheduler.get("/metrics", "root-token")[0] == 200
    assert review_counts == {"tokenreviews": 1, "subjectaccessreviews": 1}
    time.sleep(2.2)
    assert scheduler.get("/metrics", "root-token")[0] == 200
    assert review_counts == {"tokenreviews": 2, "subjectaccessreviews": 2}


def _write(cert: Certificate, directory: Path) -> None:
    (directory / "tls.key").write_text(cert.key_pem)
    (directory / "tls.crt").write_text(cert.cert_pem)


def _served_subject(scheduler: Scheduler, ca: Certificate) -> str:
    context = ssl.create_default_context(cadata=ca.cert_pem)
    with (
        socket.create_connection(("127.0.0.1", scheduler.port), timeout=10) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        peer = tls.getpeercert()
    assert peer is not None
    subject: Any = peer["subject"]  # ((("commonName", "first"),),)
    return next(str(pair[1]) for rdn in subject for pair in rdn if pair[0] == "commonName")


def test_the_given_certificate_is_served_and_reloaded_when_it_changes(
    start: Callable[..., Scheduler], tmp_path: Path
) -> None:
    ca = certificate_authority("test-ca")
    certs = tmp_path / "certs"
    certs.mkdir()
    _write(signed_by(ca, ["127.0.0.1"], common_name="first"), certs)
    scheduler = start("--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file", str(certs / "tls.key"))
    assert _served_subject(scheduler, ca) == "first"
    context = ssl.create_default_context(cadata=ca.cert_pem)
    assert scheduler.get("/metrics", "root-token", context)[0] == 200  # verifies against the CA
    _write(signed_by(ca, ["127.0.0.1"], common_name="second"), certs)
    assert _served_subject(scheduler, ca) == "second"


def test_without_a_certificate_a_self_signed_one_names_localhost(start: Callable[..., Scheduler]) -> None:
    scheduler = start()
    with socket.create_connection(("127.0.0.1", scheduler.port), timeout=10) as raw:
        context = ssl.create_default_context()
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        with context.wrap_socket(raw) as tls:
            der = tls.getpeercert(binary_form=True)
    assert der is not None
    pem = ssl.DER_cert_to_PEM_cert(der)
    verify = ssl.create_default_context(cadata=pem)  # its own CA: a client that pins it verifies it
    assert scheduler.get("/healthz", context=verify)[0] == 200


def test_half_a_certificate_pair_is_a_usage_error(api: RunningApiServer, tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "knuma", "scheduler", "--kubeconfig", str(api.kubeconfig), "--tls-cert-file", "x.crt"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "--tls-cert-file and --tls-private-key-file go together" in done.stderr
    assert "Traceback" not in done.stderr


def _handshake(port: int, *, version: ssl.TLSVersion, ciphers: str | None = None) -> tuple[str, str] | None:
    """(protocol, cipher) the secure port negotiates with a client limited to `version` (and `ciphers`), or None
    when it refuses the handshake."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.minimum_version = context.maximum_version = version
    if ciphers is not None:
        context.set_ciphers(ciphers)
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, context.wrap_socket(raw) as tls:
            cipher = tls.cipher()
            assert cipher is not None
            return str(tls.version()), cipher[0]
    except (ssl.SSLError, ConnectionError):
        return None


def test_tls_min_version_and_cipher_suites_restrict_the_secure_port(start: Callable[..., Scheduler]) -> None:
    """kube-scheduler's `--tls-min-version` and `--tls-cipher-suites` (Go names) on the in-memory certificate."""
    scheduler = start("--tls-cipher-suites", "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,TLS_AES_128_GCM_SHA256")
    listed = _handshake(scheduler.port, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES256-GCM-SHA384")
    assert listed == ("TLSv1.2", "ECDHE-ECDSA-AES256-GCM-SHA384")
    assert _handshake(scheduler.port, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256") is None
    assert _handshake(scheduler.port, version=ssl.TLSVersion.TLSv1_3) is not None  # TLS 1.3 suites are Go's own
    # the control: without the list the same client is served
    default = start()
    assert _handshake(default.port, version=ssl.TLSVersion.TLSv1_2, ciphers="ECDHE-ECDSA-AES128-GCM-SHA256") is not None

    strict = start("--tls-min-version", "VersionTLS13")
    assert _handshake(strict.port, version=ssl.TLSVersion.TLSv1_2) is None
    negotiated = _handshake(strict.port, version=ssl.TLSVersion.TLSv1_3)
    assert negotiated is not None and negotiated[0] == "TLSv1.3"


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--tls-min-version", "VersionTLS10", "unsupported --tls-min-version 'VersionTLS10'"),
        ("--tls-cipher-suites", "TLS_NOT_A_SUITE", "unknown --tls-cipher-suites name 'TLS_NOT_A_SUITE'"),
    ],
)
def test_bad_tls_flags_are_one_line_usage_errors(api: RunningApiServer, flag: str, value: str, message: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "knuma", "scheduler", "--kubeconfig", str(api.kubeconfig), flag, value],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


def _client(ca: Certificate, work: Path, name: str, *, organizations: tuple[str, ...] = ()) -> ssl.SSLContext:
    """A client context presenting a certificate `ca` signed for `name` in `organizations` (the server unverified)."""
    cert = signed_by(ca, [], common_name=name, client=True, organizations=organizations)
    pair = work / f"client-{name}-{len(list(work.glob('client-*')))}"
    pair.mkdir()
    _write(cert, pair)
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(pair / "tls.crt", pair / "tls.key")
    return context


def _refused(scheduler: Scheduler, context: ssl.SSLContext) -> bool:
    try:
        scheduler.get("/metrics", context=context)
    except (ssl.SSLError, ConnectionError):
        return True
    return False


def test_client_certificates_authenticate_their_cn_and_o_before_any_token(
    start: Callable[..., Scheduler], tmp_path: Path, review_counts: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """kube-scheduler's `--client-ca-file`: CN is the user, O the groups (plus `system:authenticated`), asked of
    SubjectAccessReview; no TokenReview for a certificate (even with a bad token beside it), and clients without one
    keep the token and anonymous paths."""
    asked: list[tuple[str, list[str]]] = []
    counted = reviews.review_access

    def recording(raw: Any) -> Any:
        asked.append((raw["spec"]["user"], raw["spec"]["groups"]))
        return counted(raw)

    monkeypatch.setattr(reviews, "review_access", recording)
    ca = certificate_authority("clients")
    (tmp_path / "clients.crt").write_text(ca.cert_pem)
    scheduler = start("--client-ca-file", str(tmp_path / "clients.crt"))  # in-memory serving certificate

    admin = _client(ca, tmp_path, "prometheus", organizations=("system:masters",))
    status, body = scheduler.get("/metrics", context=admin)
    assert status == 200, body
    assert b"scheduler_pending_pods" in body
    assert scheduler.get("/metrics", "not-a-token", admin)[0] == 200  # the certificate wins, the token is not read
    assert review_counts["tokenreviews"] == 0

    viewer = _client(ca, tmp_path, "viewer", organizations=("monitoring",))
    status, body = scheduler.get("/metrics", context=viewer)
    assert status == 403, body
    assert json.loads(body)["message"].startswith('forbidden: User "viewer" cannot get path "/metrics"')
    assert asked == [
        ("prometheus", ["system:masters", "system:authenticated"]),
        ("viewer", ["monitoring", "system:authenticated"]),
    ]

    assert scheduler.get("/metrics", "root-token")[0] == 200  # no certificate: the bearer token, as before
    status, body = scheduler.get("/metrics")
    assert status == 403 and 'User "system:anonymous"' in json.loads(body)["message"], body
    assert scheduler.get("/healthz")[0] == 200  # probes need neither

    stranger = _client(certificate_authority("other"), tmp_path, "prometheus", organizations=("system:masters",))
    assert _refused(scheduler, stranger)


def test_the_client_ca_bundle_is_reloaded_when_it_changes(start: Callable[..., Scheduler], tmp_path: Path) -> None:
    """With a given serving certificate (`--tls-cert-file`): the bundle is re-read when the file changes, so a rotated
    client CA takes effect without a restart."""
    serving_ca, old, new = certificate_authority("serving"), certificate_authority("old"), certificate_authority("new")
    certs = tmp_path / "certs"
    certs.mkdir()
    _write(signed_by(serving_ca, ["127.0.0.1"], common_name="scheduler"), certs)
    bundle = tmp_path / "clients.crt"
    bundle.write_text(old.cert_pem)
    scheduler = start(
        "--tls-cert-file", str(certs / "tls.crt"), "--tls-private-key-file", str(certs / "tls.key"),
        "--client-ca-file", str(bundle),
    )  # fmt: skip
    masters = ("system:masters",)
    assert scheduler.get("/metrics", context=_client(old, tmp_path, "a", organizations=masters))[0] == 200
    assert _refused(scheduler, _client(new, tmp_path, "b", organizations=masters))

    bundle.write_text(new.cert_pem + "\n")  # another size: a new identity even within the same mtime tick
    assert scheduler.get("/metrics", context=_client(new, tmp_path, "c", organizations=masters))[0] == 200
    assert _refused(scheduler, _client(old, tmp_path, "d", organizations=masters))


def _start_refused(api: RunningApiServer, *flags: str) -> subprocess.CompletedProcess[str]:
    """`knuma scheduler` with its secure port on a free port and `flags`, expected to stop at start."""
    return subprocess.run(
        [sys.executable, "-m", "knuma", "scheduler", "--kubeconfig", str(api.kubeconfig), "--no-leader-elect",
         "--secure-port", str(_free_port()), "--metrics-port", "0", *flags],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (None, "secure port client CA file {bundle} does not exist: mount the CA bundle there, or drop "
         "--client-ca-file"),
        ("not a certificate\n", "cannot load the secure port client CA file {bundle} (PEM certificates expected)"),
    ],
)  # fmt: skip
def test_a_bad_client_ca_file_is_a_one_line_error(
    api: RunningApiServer, tmp_path: Path, content: str | None, message: str
) -> None:
    bundle = tmp_path / "clients.crt"
    if content is not None:
        bundle.write_text(content)
    done = _start_refused(api, "--client-ca-file", str(bundle))
    assert done.returncode == 2, done.stderr
    assert message.format(bundle=bundle) in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr


HINT = "or pass --tls-cert-file and --tls-private-key-file"


@pytest.mark.parametrize("layout", ["a regular file", "a directory where the key goes"])
def test_a_cert_dir_that_cannot_hold_the_certificate_is_a_one_line_error(
    api: RunningApiServer, tmp_path: Path, layout: str
) -> None:
    """kube-scheduler's `--cert-dir` gets the self-signed pair; where it cannot be written the start stops, exit 2."""
    cert_dir = tmp_path / "certs"
    if layout == "a regular file":
        cert_dir.write_text("mine\n")
        message = (
            f"--cert-dir {cert_dir} is not a directory: give a directory for the secure port's self-signed certificate "
            f"(it is created when missing), {HINT}"
        )
    else:
        (cert_dir / "kube-scheduler.key").mkdir(parents=True)
        message = (
            f"cannot write the secure port's self-signed certificate into --cert-dir {cert_dir}: Is a directory; give "
            f"a directory the scheduler can write, {HINT}"
        )
    done = _start_refused(api, "--cert-dir", str(cert_dir))
    assert (done.returncode, done.stderr) == (2, f"error: {message}\n")
