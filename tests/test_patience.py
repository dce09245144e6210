"""Start-up requests wait for the API server (route_monitor.operator.patience): API failures are
tried again with growing delays and logged once per try with the reason; our own bugs are not."""

from __future__ import annotations

import logging

import httpx
import pytest
from lightkube import ApiError

from route_monitor.operator.patience import from_the_api, until_answered


def api_error(code: int) -> ApiError:
    request = httpx.Request("GET", "https://api.example:6443/apis/route.openshift.io/v1/routes")
    body = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "nope", "code": code}
    return ApiError(request=request, response=httpx.Response(code, json=body, request=request))


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

    call = Flaky([ConnectionRefusedError(111, "Connection refused"), api_error(500), api_error(403),
                  httpx.ReadTimeout("timed out"), api_error(429), api_error(503)])
    with caplog.at_level(logging.WARNING, logger="route_monitor.operator"):
        assert await until_answered("listing Route", call, sleep=sleep) == "answer"
    assert call.calls == 7
    assert slept == [1.0, 2.0, 5.0, 10.0, 10.0, 10.0]
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 6 and all(line.startswith("listing Route failed (") for line in lines)
    assert "ConnectionRefusedError" in lines[0] and "HTTP 500" in lines[1]
    assert "HTTP 403" in lines[2] and "ClusterRole" in lines[2]
    assert "trying again in 10 s (try 6)" in lines[5]


async def test_a_bug_of_ours_is_not_retried() -> None:
    async def sleep(seconds: float) -> None:
        raise AssertionError("a bug must not be retried")

    with pytest.raises(KeyError):
        await until_answered("listing Route", Flaky([KeyError("spec")]), sleep=sleep)


@pytest.mark.parametrize(("error", "expected"), [
    (api_error(404), True), (httpx.ConnectError("refused"), True), (TimeoutError(), True),
    (ConnectionResetError(), True), (ValueError("bad"), False), (TypeError("bad"), False),
])
def test_what_counts_as_the_api_failing(error: BaseException, expected: bool) -> None:
    assert from_the_api(error) is expected
