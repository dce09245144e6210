"""The Prometheus API client on answers a live Prometheus rarely gives, where no server is needed:
an answer that is not JSON, ``status: error`` with HTTP 200, a range vector where an instant one
was asked, a scalar, 429 then success, and timeouts until the attempts run out (``respx``)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
import respx

from route_monitor.slo.promapi import PrometheusAPI, PrometheusUnavailable, PromSettings, QueryRejected

URL = "http://prometheus.test:9090"
QUERY = f"{URL}/api/v1/query"


@pytest.fixture
def router() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=True, assert_all_mocked=True) as mock:
        yield mock


def api(attempts: int = 3) -> PrometheusAPI:
    return PrometheusAPI(PromSettings(url=URL, attempts=attempts, backoff=0.0, timeout=1.0))


async def test_an_answer_that_is_not_json_is_rejected_naming_the_status(router: respx.MockRouter) -> None:
    router.post(QUERY).mock(return_value=httpx.Response(200, text="<html>login</html>"))
    async with api() as p:
        with pytest.raises(QueryRejected, match=r"^HTTP 200: the answer is not JSON$"):
            await p.query("up")


async def test_status_error_with_200_is_rejected_with_prometheus_own_words(router: respx.MockRouter) -> None:
    router.post(QUERY).mock(return_value=httpx.Response(200, json={"status": "error", "error": "bad_data: parse"}))
    async with api() as p:
        with pytest.raises(QueryRejected, match="bad_data: parse"):
            await p.query("up{")


async def test_a_range_vector_is_not_taken_for_an_instant_one(router: respx.MockRouter) -> None:
    body = {"status": "success", "data": {"resultType": "matrix", "result": []}}
    router.post(QUERY).mock(return_value=httpx.Response(200, json=body))
    async with api() as p:
        with pytest.raises(QueryRejected, match="not an instant vector"):
            await p.query("up[5m]")


async def test_a_scalar_is_one_sample_without_labels(router: respx.MockRouter) -> None:
    body = {"status": "success", "data": {"resultType": "scalar", "result": [1795000000, "0.25"]}}
    router.post(QUERY).mock(return_value=httpx.Response(200, json=body))
    async with api() as p:
        samples = await p.query("scalar(vector(0.25))")
    assert [(dict(s.labels), s.value) for s in samples] == [({}, 0.25)]


async def test_429_is_retried_then_the_answer_taken(router: respx.MockRouter) -> None:
    ok = {"status": "success", "data": {"resultType": "vector",
                                        "result": [{"metric": {"job": "a"}, "value": [1, "1"]}]}}
    route = router.post(QUERY).mock(side_effect=[httpx.Response(429), httpx.Response(200, json=ok)])
    async with api() as p:
        samples = await p.query("up")
    assert route.call_count == 2
    assert [dict(s.labels) for s in samples] == [{"job": "a"}]


async def test_timeouts_until_the_attempts_run_out_are_unavailable(router: respx.MockRouter) -> None:
    route = router.post(QUERY).mock(side_effect=httpx.ReadTimeout("read timed out"))
    async with api(attempts=2) as p:
        with pytest.raises(PrometheusUnavailable, match=r"unreachable after 2 attempts \(ReadTimeout: read timed out\)"):
            await p.query("up")
    assert route.call_count == 2
