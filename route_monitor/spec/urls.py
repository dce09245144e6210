"""URL checks shared by every path a URL comes in through (manifests, Routes, ``--service-url``,
redirects), so that no URL with credentials is ever probed with them, exported or logged.

- :func:`refuse_userinfo`: a URL with user info (``https://user:pass@host/``) is refused with a
  message pointing to ``spec.probe.auth`` that never repeats the password (nor the user name);
- :func:`port_problem`: a port outside 1-65535 (or not a number) is refused when the manifest is
  validated, not when the probe runs; so is a URL that does not parse or has no usable host
  (:func:`host_problem`);
- :func:`redact`: the text of a URL with any user info replaced by ``***``, for details and logs
  of what the prober saw (e.g. a ``Location`` header it was sent).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

USERINFO_MESSAGE = ("credentials in the URL are not accepted (they would show in status, metrics and logs): "
                    "remove the user info and set spec.probe.auth (basic or bearer, from a Secret)")
_USERINFO = re.compile(r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)[^/?#\s]*@")


def has_userinfo(url: str) -> bool:
    return "@" in urlsplit(url.strip()).netloc


def redact(text: str) -> str:
    """Every URL in ``text`` without its user info: ``https://user:pass@host/x`` -> ``https://***@host/x``."""
    return _USERINFO.sub(lambda m: f"{m.group('scheme')}***@", text)


def port_problem(url: str) -> str | None:
    """Why the URL's port is not usable (outside 1-65535 or not a number), or None."""
    try:
        port = urlsplit(url).port
    except ValueError:
        return "the port must be a number from 1 to 65535"
    if port is not None and not 1 <= port <= 65535:
        return "the port must be a number from 1 to 65535"
    return None


def host_problem(url: str) -> str | None:
    """Why the URL cannot be parsed or has no usable host (``http://[::1/``, ``http://:80/``, a
    space in the host), or None."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError as e:
        return f"not a valid URL: {e}"
    if not host:
        return "the URL has no host"
    if any(c.isspace() or not c.isprintable() for c in parts.netloc):
        return "the host contains a space or a control character"
    return None


def url_problems(url: str) -> list[str]:
    """Every reason ``url`` must not be probed as written: unparsable or no host (then nothing
    else is checked), else user info and a bad port, each."""
    problem = host_problem(url)
    if problem is not None:
        return [problem]
    return [p for p in (USERINFO_MESSAGE if has_userinfo(url) else None, port_problem(url)) if p is not None]


def url_problem(url: str) -> str | None:
    """Why ``url`` must not be probed as written (unparsable, no host, user info, bad port), or None."""
    return next(iter(url_problems(url)), None)
