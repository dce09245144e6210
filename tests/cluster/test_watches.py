"""The operator's own list+watch of every kind (``route_monitor.operator.watches``) against the
real apiserver: every change arrives as the supervisor expects it (ADDED, MODIFIED with a status
write, DELETED), monitors that vanished while the watch was down are observed as deleted when it
lists again, a refused request is tried again without ending the watch, core kinds (Services)
come as custom ones do, and a kind whose API is not served is watched once its CRD is installed. (Reconnects across an
apiserver or etcd restart, cut connections and a 410 after compaction run through the real operator
in the chaos modules.)"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import yaml
from lightkube.resources.apiextensions_v1 import CustomResourceDefinition
from lightkube.resources.core_v1 import Namespace, Service

from alert_rules import names
from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.operator.watches import Api, KindWatch, api_of
from tests.support.cluster import Cluster, kubeconfig
from tests.support.operator import admin_client
from tests.support.resources import RouteMonitor

pytestmark = pytest.mark.cluster
Event = tuple[str | None, str, str | None]


def _monitor(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": names.API_VERSION, "kind": names.KIND, "metadata": {"name": name, "namespace": ns},
            "spec": {"target": {"url": f"https://{name}.example.com/"}, "slo": {"availability": "99.9"}}}


def _direct(config_path: Any) -> tuple[transport.AiohttpTransport, rest.Rest]:
    """The operator's connection pool and direct path for a kubeconfig (close the pool after)."""
    config = kc.from_file(config_path)
    pool = transport.for_config(config)
    direct = rest.for_config(config, pool.session, pool.watch_session)
    assert direct is not None
    return pool, direct


async def _watching(config_path: Any, ns: str, known: list[tuple[str, str]],
                    body: Callable[[rest.Rest, list[Event]], Awaitable[None]]) -> list[Event]:
    pool, direct = _direct(config_path)
    seen: list[Event] = []

    def observe(kind: str, event: str | None, obj: Any) -> None:
        assert kind == "routemonitor"
        meta = obj["metadata"]
        seen.append((event, meta["name"], (obj.get("status") or {}).get("url")))

    watch = KindWatch(direct, api_of("routemonitor"), (ns,), observe=observe, known=lambda: known, delays=(0.2,))
    task = asyncio.create_task(watch.run())
    try:
        await body(direct, seen)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await pool.aclose()
    return seen


async def _until(what: str, check: Callable[[], bool], timeout: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + timeout
    while not check():
        assert asyncio.get_running_loop().time() < deadline, what
        await asyncio.sleep(0.05)


def test_changes_arrive_and_monitors_gone_while_not_watching_are_deleted(cluster: Cluster) -> None:
    ns = "mwatch"
    admin_client(cluster).create(Namespace.from_dict({"metadata": {"name": ns}}))
    path = rest.path(names.GROUP, names.VERSION, names.PLURAL, ns)

    admin_client(cluster).create(RouteMonitor.from_dict(_monitor(ns, "before")))  # listed, not watched
    for i in range(150):  # a list of more than 128 KiB, which the API server compresses unless told not to
        padded = _monitor(ns, f"pad{i}")
        padded["metadata"]["annotations"] = {"example.com/padding": "x" * 1000}
        admin_client(cluster).create(RouteMonitor.from_dict(padded))

    async def body(api: rest.Rest, seen: list[Event]) -> None:
        await _until("the listed monitors and the vanished one", lambda: (None, "before", None) in seen
                     and (None, "pad149", None) in seen and ("DELETED", "gone-while-down", None) in seen)
        await api.create(path, _monitor(ns, "after"))
        await api.merge_patch(rest.path(names.GROUP, names.VERSION, names.PLURAL, ns, "after", "status"),
                              {"status": {"url": "https://after.example.com/"}})
        await _until("the status write", lambda: ("MODIFIED", "after", "https://after.example.com/") in seen)
        admin_client(cluster).delete(RouteMonitor, "after", namespace=ns)
        await _until("the deletion", lambda: ("DELETED", "after", "https://after.example.com/") in seen)

    seen = asyncio.run(_watching(cluster.admin_kubeconfig, ns, [(ns, "gone-while-down"), ("other", "x")], body))
    assert ("ADDED", "after", None) in seen
    assert not any(name == "x" for _, name, _ in seen), "another namespace's monitors are not touched"


def test_a_refused_watch_is_tried_again_and_never_ends(cluster: Cluster, tmp_path: Any,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    bad = tmp_path / "bad.kubeconfig"
    bad.write_text(yaml.safe_dump(kubeconfig(cluster.server, "not-a-token", "nobody")))

    async def body(_: rest.Rest, seen: list[Event]) -> None:
        await asyncio.sleep(1.5)

    with caplog.at_level("DEBUG", logger="route_monitor.operator.watches"):
        seen = asyncio.run(_watching(bad, "default", [], body))
    tries = [r for r in caplog.records if "RouteMonitor watch in namespace default failed" in r.getMessage()]
    assert seen == [] and len(tries) >= 3, [r.getMessage() for r in caplog.records]
    assert [r.levelname for r in tries][:2] == ["WARNING", "DEBUG"], "one warning per streak of failures"
    assert "401" in tries[0].getMessage() or "Unauthorized" in tries[0].getMessage()


def test_a_monitor_known_only_after_the_list_was_asked_for_is_not_taken_for_deleted(cluster: Cluster) -> None:
    """The operator's own reconcile may create a monitor (and know it) while a list is in flight
    whose snapshot predates it: only what was known before the list and is not in it is deleted."""
    ns = "mwatch-race"
    admin_client(cluster).create(Namespace.from_dict({"metadata": {"name": ns}}))
    asked = {"list": False}

    def knowing() -> list[tuple[str, str]]:  # "made-meanwhile" is learnt once the list is on its way
        return [(ns, "old"), *([(ns, "made-meanwhile")] if asked["list"] else [])]

    async def go() -> list[Event]:
        pool, direct = _direct(cluster.admin_kubeconfig)
        get = direct.get

        async def listing(where: str, query: Any) -> Any:
            asked["list"] = True
            return await get(where, query)

        direct.get = listing  # type: ignore[method-assign]
        seen: list[Event] = []
        watch = KindWatch(direct, api_of("routemonitor"), (ns,), observe=lambda kind, event, obj: seen.append(
            (event, obj["metadata"]["name"], None)), known=knowing)
        try:
            await watch.reflectors[0].list()
        finally:
            await pool.aclose()
        return seen

    assert asyncio.run(go()) == [("DELETED", "old", None)]


WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.watch-test.example.com"},
    "spec": {"group": "watch-test.example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_a_kind_not_served_is_asked_for_quietly_and_watched_once_its_crd_is_installed(
        cluster: Cluster, caplog: pytest.LogCaptureFixture) -> None:
    """No Gateway API, no Routes (a plain cluster): the watch asks again without a line (the
    start-up listing said it once) and picks the kind up when the CRD is installed, without a
    restart. A core kind (Services) and a custom one come the same way."""
    ns = "kwatch"
    admin = admin_client(cluster)
    admin.create(Namespace.from_dict({"metadata": {"name": ns}}))
    widget = Api("widget", "watch-test.example.com/v1", "Widget", "widgets")

    async def go() -> list[Event]:
        pool, direct = _direct(cluster.admin_kubeconfig)
        seen: list[Event] = []

        def observe(kind: str, event: str | None, obj: Any) -> None:
            seen.append((event, f"{kind}/{obj['metadata']['name']}", obj.get("kind")))

        watches = [KindWatch(direct, widget, (ns,), observe=observe, known=lambda: [], not_served_delay=0.3),
                   KindWatch(direct, api_of("service"), (ns,), observe=observe, known=lambda: [])]
        tasks = [asyncio.create_task(w.run()) for w in watches]
        try:
            await asyncio.sleep(1.5)  # ~5 tries of the widgets, not served
            admin.create(CustomResourceDefinition.from_dict(WIDGETS))
            admin.create(Service.from_dict({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "api", "namespace": ns},
                                            "spec": {"ports": [{"port": 80}]}}))
            await _until("the Service", lambda: ("ADDED", "service/api", "Service") in seen)
            widgets = rest.path("watch-test.example.com", "v1", "widgets", ns)
            for _ in range(100):  # the CRD's API is served a moment after it is created
                try:
                    await direct.create(widgets, {"apiVersion": "watch-test.example.com/v1", "kind": "Widget",
                                                  "metadata": {"name": "w1", "namespace": ns}})
                    break
                except Exception:
                    await asyncio.sleep(0.1)
            await _until("the Widget", lambda: any(name == "widget/w1" for _, name, _ in seen))
        finally:
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await pool.aclose()
        return seen

    with caplog.at_level("DEBUG", logger="route_monitor.operator.watches"):
        asyncio.run(go())
    lines = [(r.levelname, r.getMessage()) for r in caplog.records if "Widget" in r.getMessage()]
    asked = [m for level, m in lines if "not served in namespace kwatch; asking again" in m]
    assert len(asked) >= 3 and all(level == "DEBUG" for level, m in lines if "asking again" in m), lines
    assert ("INFO", "Widget (watch-test.example.com/v1) is served now in namespace kwatch: watching it") in lines


def test_the_start_up_list_is_the_watchs_own_and_the_watch_goes_on_from_it(cluster: Cluster) -> None:
    """``prime`` lists once (what exists is observed before any watch runs); ``run`` then watches
    from that list's version without listing again, and sees what changed in between. A kind not
    served primes to False at once (no retry loop at start: its watch keeps asking)."""
    ns = "kprime"
    admin = admin_client(cluster)
    admin.create(Namespace.from_dict({"metadata": {"name": ns}}))
    admin.create(RouteMonitor.from_dict(_monitor(ns, "existing")))

    async def go() -> tuple[list[Event], list[str], bool]:
        pool, direct = _direct(cluster.admin_kubeconfig)
        get, lists = direct.get, []

        async def counted(where: str, query: Any) -> Any:
            lists.append(where)
            return await get(where, query)

        direct.get = counted  # type: ignore[method-assign]
        seen: list[Event] = []
        watch = KindWatch(direct, api_of("routemonitor"), (ns,), known=lambda: [(ns, "existing")],
                          observe=lambda kind, event, obj: seen.append((event, obj["metadata"]["name"], None)))
        missing = KindWatch(direct, Api("gizmo", "prime-test.example.com/v1", "Gizmo", "gizmos"), (ns,),
                            observe=lambda *_: None, known=lambda: [])
        try:
            assert await watch.prime() and seen == [(None, "existing", None)]
            served = await missing.prime()
            admin.create(RouteMonitor.from_dict(_monitor(ns, "between")))  # after the list, before the watch
            task = asyncio.create_task(watch.run())
            await _until("the monitor made in between", lambda: ("ADDED", "between", None) in seen)
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        finally:
            await pool.aclose()
        return seen, lists, served

    seen, lists, served = asyncio.run(go())
    assert not served
    assert [w for w in lists if w.endswith("/routemonitors")] == [
        rest.path(names.GROUP, names.VERSION, names.PLURAL, ns)], "one list of the RouteMonitors, at start"
    assert seen == [(None, "existing", None), ("ADDED", "between", None)]
