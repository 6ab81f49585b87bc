"""Structured logs for the node agent: one JSON object per line on stderr (what log collectors on nodes expect)."""

from __future__ import annotations

import json
import logging
import sys
import time

__all__ = ["JSONFormatter", "configure"]


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


LOGGERS = ("knuma.exporter", "knuma.serving")
"""The exporter's own logs and its HTTP(S) server's (failed handlers, refused TLS handshakes)."""


def configure(level: int) -> None:
    """Send the `LOGGERS` to stderr as JSON lines at `level` (idempotent)."""
    for name in LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(level)
        if not any(getattr(h, "_knuma_json", False) for h in logger.handlers):
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(JSONFormatter())
            handler._knuma_json = True  # type: ignore[attr-defined]
            logger.addHandler(handler)
            logger.propagate = False
