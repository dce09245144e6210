"""Logging set-up for long-running commands: ``--log-format text|json`` and ``--log-level``.

JSON lines (python-json-logger) carry ``time``, ``level``, ``logger`` and ``message``, plus
``namespace`` and ``monitor`` when a line is about one monitor (passed as ``extra``), so a log
pipeline can filter one monitor's history without parsing messages.
"""

from __future__ import annotations

import logging
import sys
from typing import Final

from pythonjsonlogger.json import JsonFormatter

FORMATS: Final = ("text", "json")
LEVELS: Final = ("debug", "info", "warning", "error")
TEXT_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"
_QUIET: Final = ("httpx", "httpcore", "httpx2", "httpcore2", "kopf.objects")
"""Libraries that log a line per request at INFO."""


def monitor_extra(key: tuple[str, str]) -> dict[str, str]:
    """``extra=`` for a log line about one monitor."""
    return {"namespace": key[0], "monitor": key[1]}


def configure(*, fmt: str = "text", level: str = "info") -> None:
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter("%(asctime)s %(levelname)s %(name)s %(message)s",
                                           rename_fields={"asctime": "time", "levelname": "level", "name": "logger"}))
    else:
        handler.setFormatter(logging.Formatter(TEXT_FORMAT))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in _QUIET:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))
