"""Logging set-up for long-running commands: ``--log-format text|json`` and ``--log-level``.

Used alike by ``operator`` and ``standalone``. Text lines start with the local time; JSON lines
(python-json-logger) carry ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger`` and ``message``, plus
``namespace`` and ``monitor`` when a line is about one monitor (passed as ``extra``), so a log
pipeline can filter one monitor's history without parsing messages.
"""

from __future__ import annotations

import datetime as dt
import logging
import sys
from typing import Final

from pythonjsonlogger.core import RESERVED_ATTRS
from pythonjsonlogger.json import JsonFormatter

FORMATS: Final = ("text", "json")
LEVELS: Final = ("debug", "info", "warning", "error")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_QUIET: Final = ("httpx", "httpcore", "httpx2", "httpcore2", "kopf.objects")
"""Libraries that log a line per request at INFO."""


class _Rfc3339JsonFormatter(JsonFormatter):
    """``time`` as RFC 3339 (``2026-11-26T19:50:01.123Z``), what log pipelines parse without a
    format string (logging's default, ``2026-11-26 19:50:01,123``, is not)."""

    def formatTime(self, record: logging.LogRecord, datefmt: str | None = None) -> str:
        when = dt.datetime.fromtimestamp(record.created, dt.UTC)
        return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


FINDING: Final = {"finding": True}
"""``extra=`` for a line about the input (``path: error: Kind/ns/name: field: ...``): printed as is
in text, the same line ``check`` prints; a JSON record like any other."""


class _TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        if getattr(record, "finding", False):
            return record.getMessage()
        return super().format(record)


def monitor_extra(key: tuple[str, str]) -> dict[str, str]:
    """``extra=`` for a log line about one monitor."""
    return {"namespace": key[0], "monitor": key[1]}


def configure(*, fmt: str = "text", level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(_Rfc3339JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                                   rename_fields={"asctime": "time", "levelname": "level",
                                                                  "name": "logger"},
                                                   reserved_attrs=[*RESERVED_ATTRS, "finding"]))
    else:
        handler.setFormatter(_TextFormatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
