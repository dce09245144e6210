"""The ``Authorization`` header the operator sends, from the kubeconfig's user or the service
account (:mod:`~route_monitor.kube.kubeconfig`): a bearer token, a token file read again when the
kubelet rotates it, or a user name and password (a client certificate is in the TLS context). A
user that logs in through an exec plugin or an auth provider is refused (:func:`unsupported_user`)."""

from __future__ import annotations

import base64
import os

from route_monitor.kube.kubeconfig import KubeConfig


class BearerToken:
    """The ``Authorization`` header: a fixed token, or a token file read again when it changes."""

    def __init__(self, *, token: str | None = None, token_file: str | None = None) -> None:
        self._token, self._file = token, token_file
        self._stamp: tuple[int, int] | None = None
        self._header: str | None = f"Bearer {token}" if token else None

    def header(self) -> str | None:
        if self._file is None:
            return self._header
        stat = os.stat(self._file)  # ~2 us; a rotated token is a new file (new inode or mtime)
        stamp = (stat.st_ino, stat.st_mtime_ns)
        if stamp != self._stamp:
            with open(self._file, encoding="utf-8") as f:
                self._header = f"Bearer {f.read().strip()}"
            self._stamp = stamp
        return self._header


class BasicAuth:
    """The ``Authorization`` header of a kubeconfig user with a user name and password."""

    def __init__(self, username: str, password: str) -> None:
        self._header = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode("ascii")

    def header(self) -> str | None:
        return self._header


class UnsupportedUser(Exception):
    """The kubeconfig's user authenticates in a way the operator does not implement."""


def unsupported_user(config: KubeConfig) -> str | None:
    """Why the operator cannot authenticate as ``config``'s current user, or None when it can."""
    user = config.user
    if user is None:
        return None  # no user: anonymous, or a client certificate only
    how = f"an exec plugin ({user.exec_command})" if user.exec_command is not None else \
        "an auth provider" if user.auth_provider else None
    if how is None:
        return None
    return (f"the user of context {config.context_name!r} authenticates through {how}; the operator needs a "
            "token, a token file, a client certificate, a user name and password, or the in-cluster service account")
