from __future__ import annotations

import asyncio

from knuma.exporter.http import SimpleHTTPServer


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
