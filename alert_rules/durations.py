"""Prometheus durations (``500ms``, ``30s``, ``1h30m``, ``30d``) <-> seconds.

Durations are kept as integer milliseconds so that arithmetic on windows stays exact.
"""

from __future__ import annotations

import functools
import re

_UNITS_MS = {"y": 365 * 86_400_000, "w": 7 * 86_400_000, "d": 86_400_000,
             "h": 3_600_000, "m": 60_000, "s": 1_000, "ms": 1}
_ORDER = ("y", "w", "d", "h", "m", "s", "ms")
_TOKEN = re.compile(r"(\d+)(ms|y|w|d|h|m|s)")
PATTERN = r"^((\d+)y)?((\d+)w)?((\d+)d)?((\d+)h)?((\d+)m)?((\d+)s)?((\d+)ms)?$"
"""The same pattern Prometheus and prometheus-operator validate durations with."""


class DurationError(ValueError):
    """A string is not a Prometheus duration."""


MAX_DIGITS = 12
"""Digits of one number in a duration (``999999999999ms`` is 31 years; ``int()`` of a
5,000-digit string is refused by Python, and is no duration anyway)."""


def _shown(text: object) -> str:
    if isinstance(text, int | float) and (not isinstance(text, int) or text.bit_length() < 128):
        return repr(text)
    shown = repr(text[:40]) if isinstance(text, str) else f"a value of type {type(text).__name__}"
    return shown + ("..." if isinstance(text, str) and len(text) > 40 else "")


def parse_ms(text: str) -> int:
    """Parse a Prometheus duration into integer milliseconds (units in descending order)."""
    if not isinstance(text, str) or not text or not re.fullmatch(PATTERN, text):
        raise DurationError(
            f"{_shown(text)} is not a duration: use a number and a unit (ms, s, m, h, d, w), "
            "e.g. 500ms, 30s, 1m30s, 6h, 30d"
        )
    tokens = _TOKEN.findall(text)
    if any(len(n.lstrip("0")) > MAX_DIGITS for n, _ in tokens):
        raise DurationError(f"{_shown(text)} is too large: at most {MAX_DIGITS} "
                            "digits per number")
    total = sum(int(n.lstrip("0") or "0") * _UNITS_MS[u] for n, u in tokens)
    if total <= 0:
        raise DurationError(f"{_shown(text)} is zero: a duration must be positive")
    return total


def parse_seconds(text: str) -> float:
    """Parse a Prometheus duration into seconds."""
    return parse_ms(text) / 1000


@functools.lru_cache(maxsize=1024)
def format_ms(ms: int) -> str:
    """Render milliseconds as the shortest Prometheus duration (``90000`` -> ``1m30s``)."""
    if ms <= 0:
        raise DurationError("a duration must be positive")
    parts = []
    rest = ms
    for unit in _ORDER:
        if unit == "y":
            continue  # years and weeks are ambiguous to readers; days are clearer
        if unit == "w":
            continue
        n, rest = divmod(rest, _UNITS_MS[unit])
        if n:
            parts.append(f"{n}{unit}")
    return "".join(parts)

