"""Start-up requests wait for the API server (route_monitor.kube.patience): API failures are
tried again with growing delays and logged once per try with the reason; our own bugs and a bad
kubeconfig are not. The errors are the ones the operator's API client raises (``kube/apierrors.py``);
``tests/chaos/test_chaos_apiserver.py`` starts the operator against an API that answers 500 and one
that nothing listens for."""

from __future__ import annotations

import logging
import ssl

import pytest

from route_monitor.kube import apierrors
from route_monitor.kube.kubeconfig import ConfigError
from route_monitor.kube.patience import from_the_api, until_answered
from route_monitor.operator.supervisor import error_reason
from tests.support.apierror import api_error


class Flaky:
    def __init__(self, errors: list[BaseException]) -> None:
        self.errors, self.calls = errors, 0

    async def __call__(self) -> str:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return "answer"


async def test_api_failures_are_tried_again_with_growing_delays(caplog: pytest.LogCaptureFixture) -> None:
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    call = Flaky([apierrors.ConnectError("All connection attempts failed"), api_error(500), api_error(403),
                  apierrors.ReadTimeout("timed out"), api_error(429), api_error(503)])
    with caplog.at_level(logging.WARNING, logger="route_monitor.operator"):
        assert await until_answered("listing Route", call, sleep=sleep) == "answer"
    assert call.calls == 7
    assert slept == [1.0, 2.0, 5.0, 10.0, 10.0, 10.0]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 6 and all(line.startswith("listing Route failed (") for line in lines)
    assert "ConnectError: All connection attempts failed" in lines[0] and "HTTP 500" in lines[1]
    assert "HTTP 403" in lines[2] and "ClusterRole" in lines[2]
    assert "trying again in 10 s (try 6)" in lines[5]


async def test_a_bug_of_ours_is_not_retried() -> None:
    async def sleep(seconds: float) -> None:
        raise AssertionError("a bug must not be retried")

    with pytest.raises(KeyError):
        await until_answered("listing Route", Flaky([KeyError("spec")]), sleep=sleep)


@pytest.mark.parametrize(("error", "expected"), [
    pytest.param(api_error(404), True, id="an-answer-404"),
    pytest.param(api_error(500), True, id="an-answer-500"),
    pytest.param(apierrors.ConnectError("All connection attempts failed"), True, id="refused"),
    pytest.param(apierrors.ConnectTimeout("timed out"), True, id="connect-timeout"),
    pytest.param(apierrors.ReadTimeout("timed out"), True, id="read-timeout"),
    pytest.param(apierrors.RemoteProtocolError("Server disconnected"), True, id="disconnected"),
    pytest.param(apierrors.ReadError("Connection reset by peer"), True, id="reset"),
    pytest.param(ConnectionResetError(104, "Connection reset by peer"), True, id="socket-reset"),
    pytest.param(TimeoutError(), True, id="socket-timeout"),
    pytest.param(ssl.SSLError(1, "handshake failure"), True, id="tls-failed"),
    pytest.param(ConfigError("Configuration file /nope not found"), False, id="bad-kubeconfig"),
    pytest.param(FileNotFoundError(2, "No such file or directory"), False, id="missing-certificate-file"),
    pytest.param(PermissionError(13, "Permission denied"), False, id="unreadable-token-file"),
    pytest.param(ValueError("bad"), False, id="bug-value"),
    pytest.param(TypeError("bad"), False, id="bug-type"),
])
def test_what_counts_as_the_api_failing(error: BaseException, expected: bool) -> None:
    assert from_the_api(error) is expected


@pytest.mark.parametrize(("error", "reason"), [
    pytest.param(apierrors.ConnectError("All connection attempts failed"), "api_unavailable", id="refused"),
    pytest.param(apierrors.ReadTimeout("timed out"), "api_unavailable", id="read-timeout"),
    pytest.param(api_error(503), "api_unavailable", id="an-answer-503"),
    pytest.param(FileNotFoundError(2, "No such file or directory"), "other", id="missing-file"),
])
def test_reconcile_errors_are_labelled_by_the_same_classifier(error: BaseException, reason: str) -> None:
    assert error_reason(error) == reason
