"""`ApiSession`'s own HTTP/1.1 connections against a server that answers with exact bytes: the framings a server
may choose (Content-Length, chunked, end of connection), `Connection: close`, a keep-alive connection the server
dropped while idle, and a server that never answers."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import pytest

from knuma.kube.errors import Unavailable
from knuma.kube.session import ApiSession

Answerer = Callable[[int, bytes, asyncio.StreamWriter], Awaitable[bool]]
"""(connection number, request head + body, writer) -> keep the connection open."""


async def _serve(answer: Answerer) -> tuple[asyncio.Server, list[bytes], list[int]]:
    requests: list[bytes] = []
    connections = [0]

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        connections[0] += 1
        number = connections[0]
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.lower().split(b"\r\n")
                length = next((int(line.split(b":")[1]) for line in lines if line.startswith(b"content-length")), 0)
                request = head + await reader.readexactly(length)
                requests.append(request)
                if not await answer(number, request, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, requests, connections


def _url(server: asyncio.Server) -> str:
    return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"


def test_a_request_is_one_well_formed_message_and_content_length_frames_the_answer() -> None:
    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b'HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: 9\r\n\r\n{"a": 1}\n')
        return True

    async def run() -> None:
        server, requests, connections = await _serve(answer)
        url = _url(server)
        session = ApiSession(url, user_agent="tester")
        try:
            headers = {"Accept": "application/json"}
            query = {"dryRun": "All"}
            first = await session.send("POST", "/api/v1/x", content=b'{"k":1}', params=query, headers=headers)
            second = await session.send("GET", "/api/v1/x")
        finally:
            await session.aclose()
            server.close()
        assert (first.status, first.reason, first.content) == (201, "Created", b'{"a": 1}\n')
        assert first.url == f"{url}/api/v1/x?dryRun=All"
        assert second.content == b'{"a": 1}\n'
        assert connections == [1]  # kept alive and reused
        head, _, body = requests[0].partition(b"\r\n\r\n")
        lines = head.decode().split("\r\n")
        assert lines[0] == "POST /api/v1/x?dryRun=All HTTP/1.1"
        assert {"User-Agent: tester", "Accept: application/json", "Content-Length: 7"} <= set(lines)
        assert any(line.startswith("Host: 127.0.0.1:") for line in lines)
        assert body == b'{"k":1}'
        assert requests[1].startswith(b"GET /api/v1/x HTTP/1.1\r\n") and b"Content-Length" not in requests[1]

    asyncio.run(run())


@pytest.mark.parametrize(
    "raw",
    [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nhell\r\n1;ext=1\r\no\r\n0\r\nX-Trailer: 1\r\n\r\n",
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello",
    ],
    ids=["chunked", "interim-answer"],
)
def test_other_framings_give_the_same_body(raw: bytes) -> None:
    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        for i in range(0, len(raw), 7):  # in pieces: the parser waits for the rest
            writer.write(raw[i : i + 7])
            await writer.drain()
            await asyncio.sleep(0.001)
        return True

    async def run() -> None:
        server, _, _ = await _serve(answer)
        session = ApiSession(_url(server))
        try:
            got = await session.send("GET", "/x")
        finally:
            await session.aclose()
            server.close()
        assert (got.status, got.content) == (200, b"hello")

    asyncio.run(run())


def test_large_chunked_answers_in_many_reads_on_one_connection_are_each_whole() -> None:
    """The chunked decoder keeps its place between reads and starts again for the next answer on the connection."""
    bodies = [bytes([65 + n]) * 50_000 for n in range(3)]

    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        body = bodies[int(request.split(b" ")[1].rsplit(b"/", 1)[1])]
        chunks = b"".join(
            b"%x\r\n%s\r\n" % (len(body[i : i + 997]), body[i : i + 997]) for i in range(0, len(body), 997)
        )
        raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"
        for i in range(0, len(raw), 4096):
            writer.write(raw[i : i + 4096])
            await writer.drain()
        return True

    async def run() -> list[bytes]:
        server, _, connections = await _serve(answer)
        session = ApiSession(_url(server))
        try:
            got = [(await session.send("GET", f"/x/{n}")).content for n in range(3)]
        finally:
            await session.aclose()
            server.close()
        assert connections == [1]
        return got

    assert asyncio.run(run()) == bodies


def test_a_body_delimited_by_the_end_of_the_connection_and_connection_close_are_not_reused() -> None:
    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        if number == 1:
            writer.write(b"HTTP/1.1 500 Internal Server Error\r\nConnection: close\r\n\r\nno length")
        else:
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok")
        return False

    async def run() -> None:
        server, _, connections = await _serve(answer)
        session = ApiSession(_url(server))
        try:
            first = await session.send("GET", "/x")
            second = await session.send("GET", "/x")
            third = await session.send("GET", "/x")
        finally:
            await session.aclose()
            server.close()
        assert (first.status, first.reason, first.content) == (500, "Internal Server Error", b"no length")
        assert (second.content, third.content) == (b"ok", b"ok")
        assert connections == [3]

    asyncio.run(run())


@pytest.mark.parametrize("closed", ["while-idle", "on-the-next-request"])
def test_a_keep_alive_connection_the_server_dropped_is_replaced(closed: str) -> None:
    """Dropped while idle (the close arrives first), or as the next request arrives (the race with the server's
    keep-alive timeout: the request is sent, no byte comes back): either way the request goes out on a new one."""
    answered: list[int] = []

    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        if number == 1 and answered.count(1) == 1 and closed == "on-the-next-request":
            return False  # the reused connection's request: closed without a byte
        answered.append(number)
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        await writer.drain()
        return number > 1 or closed == "on-the-next-request"

    async def run() -> None:
        server, requests, connections = await _serve(answer)
        session = ApiSession(_url(server))
        try:
            await session.send("POST", "/x", content=b"1")
            await asyncio.sleep(0.05)
            again = await session.send("POST", "/x", content=b"2")
        finally:
            await session.aclose()
            server.close()
        assert again.content == b"ok"
        assert connections == [2] and answered == [1, 2]
        bodies = [r.rpartition(b"\r\n\r\n")[2] for r in requests]
        assert bodies == ([b"1", b"2"] if closed == "while-idle" else [b"1", b"2", b"2"])

    asyncio.run(run())


def test_a_server_that_never_answers_or_refuses_is_unavailable() -> None:
    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        await asyncio.sleep(5)
        return False

    async def run() -> None:
        server, _, _ = await _serve(answer)
        port = server.sockets[0].getsockname()[1]
        session = ApiSession(_url(server), timeout=0.2)
        try:
            with pytest.raises(Unavailable, match="timed out"):
                await session.send("GET", "/x")
        finally:
            await session.aclose()
            server.close()
        refused = ApiSession(f"http://127.0.0.1:{port}")
        with pytest.raises(Unavailable, match="connection refused"):
            await refused.send("GET", "/x")

    asyncio.run(run())


def test_an_answer_that_is_not_http_fails_as_unavailable() -> None:
    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        writer.write(b"SSH-2.0-OpenSSH\r\n\r\n")
        return True

    async def run() -> None:
        server, _, _ = await _serve(answer)
        session = ApiSession(_url(server))
        try:
            with pytest.raises(Unavailable, match=r"not an HTTP/1\.1 answer"):
                await session.send("GET", "/x")
        finally:
            await session.aclose()
            server.close()

    asyncio.run(run())


def test_at_most_limit_requests_at_once_and_a_cancelled_waiter_gives_its_turn_on() -> None:
    in_flight, most = [0], [0]

    async def answer(number: int, request: bytes, writer: asyncio.StreamWriter) -> bool:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        await asyncio.sleep(0.02)
        in_flight[0] -= 1
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        return True

    async def run() -> None:
        server, requests, connections = await _serve(answer)
        session = ApiSession(_url(server), limit=2)
        try:
            sends = [asyncio.create_task(session.send("GET", f"/{i}")) for i in range(8)]
            await asyncio.sleep(0)
            sends[5].cancel()  # waiting for a slot
            done = await asyncio.gather(*sends, return_exceptions=True)
            after = await session.send("GET", "/after")
        finally:
            await session.aclose()
            server.close()
        assert isinstance(done[5], asyncio.CancelledError)
        assert [d.content for i, d in enumerate(done) if i != 5] == [b"ok"] * 7  # type: ignore[union-attr]
        assert after.content == b"ok"
        assert most[0] == 2 and connections == [2] and len(requests) == 8

    asyncio.run(run())
