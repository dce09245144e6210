"""What a request header may hold, in one place (RFC 9110 section 5): the probe's request
writer (``probe/net/http11.py``) refuses to send anything else, and ``spec.probe.headers``
(``requestspec``) refuses it when the spec is parsed, so ``check``, ``standalone`` and the
operator's ``InvalidSpec`` condition name the header before any probe runs; a bearer token read
from a Secret is checked the same way (``credentials``). The two can never drift.

- A name is a token: ASCII letters, digits and ``!#$%&'*+.^_`|~-``.
- A value is text without control characters: NUL to US except the horizontal tab, and DEL.
  Tabs and spaces inside a value are sent as written; around it they are dropped (the
  optional whitespace around a field value). Non-ASCII text is sent as UTF-8 (``obs-text``).
"""

from __future__ import annotations

import re

NAME = re.compile(rb"[-!#$%&'*+.^_`|~0-9A-Za-z]+")
"""A header name (a ``token``), matched whole."""
NAME_RULE = "letters, digits and !#$%&'*+.^_`|~-"
"""What :data:`NAME` accepts, as a message says it."""
FORBIDDEN_IN_VALUE = re.compile(rb"[\x00-\x08\x0a-\x1f\x7f]")
"""A byte no header value may hold: a control character other than the tab."""
VALUE_RULE = "text on one line without control characters (a tab is allowed)"
"""What a value may hold, as a message says it."""
OPTIONAL_WHITESPACE = b" \t"
"""Dropped around a value."""


def name_ok(name: str | bytes) -> bool:
    """``name`` is a header name."""
    if isinstance(name, str):
        if not name.isascii():
            return False
        name = name.encode("ascii")
    return NAME.fullmatch(name) is not None


def value_ok(value: str | bytes) -> bool:
    """``value`` can be sent as a header value (text as UTF-8; text that cannot be encoded cannot)."""
    if isinstance(value, str):
        try:
            value = value.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate
            return False
    return FORBIDDEN_IN_VALUE.search(value) is None
