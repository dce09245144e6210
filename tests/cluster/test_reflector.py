"""The one list+watch loop (``route_monitor.kube.reflector``) against the real apiserver, on the
operator's own REST client: what is listed and what changes arrive with label and field selectors,
in one namespace and cluster-wide; a watch cut by the network is watched again from its version
(no second list); a version etcd compacted away (410 after the apiserver's watch cache restarted)
lists again and reports what was deleted meanwhile as vanished; one named object read with a GET;
a refused watch lists again, one warning per streak of failures."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from lightkube import Client
from lightkube.models.meta_v1 import ObjectMeta
from lightkube.resources.core_v1 import ConfigMap, Namespace

from route_monitor.kube import kubeconfig as kc
from route_monitor.kube import rest, transport
from route_monitor.kube.reflector import Reflector
from route_monitor.kube.watched import Backoff, Change, Selector, Watched
from tests.support.cluster import ADMIN_TOKEN, Cluster
from tests.support.faultproxy import FaultProxy
from tests.support.operator import admin_client

pytestmark = pytest.mark.cluster
Seen = tuple[Change, str]
FAST = Backoff((0.2,))


def configmap(ns: str, name: str, labels: dict[str, str] | None = None) -> ConfigMap:
    return ConfigMap(metadata=ObjectMeta(name=name, namespace=ns, labels=labels or {}), data={"k": "v"})


def namespace(cluster: Cluster, name: str, *holding: str) -> Client:
    """A new namespace holding these ConfigMaps; the admin client that made them."""
    admin = admin_client(cluster)
    admin.create(Namespace(metadata=ObjectMeta(name=name)))
    for made in holding:
        admin.create(configmap(name, made))
    return admin


class Recorder:
    """What a reflector reported, and the requests it made (``count``)."""

    def __init__(self) -> None:
        self.seen: list[Seen] = []
        self.synced = 0
        self.requests: list[str] = []

    def change(self, change: Change, obj: dict[str, Any]) -> None:
        self.seen.append((change, f"{obj['metadata'].get('namespace', '')}/{obj['metadata']['name']}"))

    def sync(self) -> None:
        self.synced += 1

    def reflector(self, api: rest.Rest, watched: Watched) -> Reflector:
        return Reflector(api, watched, self.change, on_synced=self.sync, count=self.requests.append, backoff=FAST)

    async def listed(self, api: rest.Rest, watched: Watched) -> Reflector:
        """A reflector that has made its first list."""
        reflector = self.reflector(api, watched)
        await reflector.list()
        return reflector


@pytest.fixture
def proxy(cluster: Cluster) -> Iterator[FaultProxy]:
    """A proxy in front of the apiserver whose faults a test sets."""
    server = urlsplit(cluster.server)
    fault_proxy = FaultProxy(server.hostname or "127.0.0.1", server.port or 443)
    yield fault_proxy
    fault_proxy.close()


@asynccontextmanager
async def direct(config_path: Path) -> AsyncIterator[rest.Rest]:
    config = kc.from_file(str(config_path))
    pool = transport.for_config(config)
    api = rest.for_config(config, pool.session, pool.watch_session)
    assert api is not None
    try:
        yield api
    finally:
        await pool.aclose()


@asynccontextmanager
async def running(reflector: Reflector) -> AsyncIterator[None]:
    task = asyncio.create_task(reflector.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def until(what: str, check: Callable[[], bool], timeout: float = 20) -> None:
    async with asyncio.timeout(timeout):
        while not check():
            await asyncio.sleep(0.05)


def configmaps(ns: str | None, **kw: Any) -> Watched:
    return Watched(api_version="v1", kind="ConfigMap", plural="configmaps", namespace=ns, **kw)


def test_selectors_narrow_the_list_and_the_watch_in_a_namespace_and_cluster_wide(cluster: Cluster) -> None:
    a, b = "reflect-sel-a", "reflect-sel-b"
    admin = admin_client(cluster)
    for ns in (a, b):
        namespace(cluster, ns)
        admin.create(configmap(ns, "picked", {"reflect-test": "yes"}))
        admin.create(configmap(ns, "other", {"reflect-test": "no"}))

    async def go() -> tuple[Recorder, Recorder, Recorder]:
        labelled, named, everywhere = Recorder(), Recorder(), Recorder()
        async with direct(cluster.admin_kubeconfig) as api:
            reflectors = [labelled.reflector(api, configmaps(a, selector=Selector(labels={"reflect-test": "yes"}))),
                          named.reflector(api, configmaps(a, selector=Selector(fields={"metadata.name": "other"}))),
                          everywhere.reflector(api, configmaps(None, selector=Selector(labels={"reflect-test": "yes"})))]
            for r in reflectors:
                await r.list()
            async with running(reflectors[0]), running(reflectors[1]), running(reflectors[2]):
                admin.create(configmap(a, "late", {"reflect-test": "yes"}))
                admin.create(configmap(b, "late-other", {"reflect-test": "no"}))
                admin.patch(ConfigMap, "other", {"data": {"k": "changed"}}, namespace=a)
                admin.delete(ConfigMap, "picked", namespace=b)
                await until("every change", lambda: (Change.ADDED, f"{a}/late") in labelled.seen
                            and (Change.MODIFIED, f"{a}/other") in named.seen
                            and (Change.DELETED, f"{b}/picked") in everywhere.seen)
        return labelled, named, everywhere

    labelled, named, everywhere = asyncio.run(go())
    assert labelled.seen == [(Change.LISTED, f"{a}/picked"), (Change.ADDED, f"{a}/late")]
    assert named.seen == [(Change.LISTED, f"{a}/other"), (Change.MODIFIED, f"{a}/other")]
    assert set(everywhere.seen[:2]) == {(Change.LISTED, f"{a}/picked"), (Change.LISTED, f"{b}/picked")}
    assert everywhere.seen[2:] == [(Change.ADDED, f"{a}/late"), (Change.DELETED, f"{b}/picked")]
    assert labelled.requests == ["list", "watch"] and labelled.synced == 1


def test_a_cut_watch_goes_on_from_its_version_without_listing_again(cluster: Cluster, proxy: FaultProxy,
                                                                    tmp_path: Path) -> None:
    ns = "reflect-cut"
    admin = namespace(cluster, ns, "first")
    recorder = Recorder()

    async def go() -> None:
        async with direct(proxy.kubeconfig(tmp_path / "kubeconfig", ADMIN_TOKEN, "admin")) as api:
            reflector = await recorder.listed(api, configmaps(ns))
            async with running(reflector):
                await until("the watch", lambda: recorder.requests == ["list", "watch"])
                proxy.cut()  # every connection reset, new ones refused until healed
                await asyncio.to_thread(admin.create, configmap(ns, "made-while-cut"))
                await until("a try while cut", lambda: recorder.requests.count("watch") >= 2)
                proxy.heal()
                await until("the change made while cut", lambda: (Change.ADDED, f"{ns}/made-while-cut")
                            in recorder.seen)

    asyncio.run(go())
    assert recorder.seen == [(Change.LISTED, f"{ns}/first"), (Change.ADDED, f"{ns}/made-while-cut")]
    assert recorder.requests.count("list") == 1, recorder.requests


def test_a_version_compacted_away_lists_again_and_reports_what_vanished(
        cluster: Cluster, proxy: FaultProxy, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    ns = "reflect-gone"
    admin = namespace(cluster, ns, "kept", "deleted-meanwhile")
    recorder = Recorder()

    async def go() -> None:
        async with direct(proxy.kubeconfig(tmp_path / "kubeconfig", ADMIN_TOKEN, "admin")) as api:
            reflector = await recorder.listed(api, configmaps(ns))
            async with running(reflector):
                await until("the watch", lambda: "watch" in recorder.requests)
                proxy.cut()  # the watch stops at its version and cannot start again

                def history() -> None:
                    admin.delete(ConfigMap, "deleted-meanwhile", namespace=ns)
                    admin.create(configmap(ns, "made-meanwhile"))
                    cluster.compact_etcd()
                    cluster.restart_apiserver()  # a fresh watch cache: the old version is gone (410)

                await asyncio.to_thread(history)
                proxy.heal()
                await until("the relist", lambda: recorder.synced == 2, timeout=60)

    with caplog.at_level(logging.INFO, logger="route_monitor.kube.reflector"):
        asyncio.run(go())
    assert f"ConfigMap watch in namespace {ns}: resourceVersion too old, listing again" in caplog.text
    assert recorder.requests.count("list") == 2, recorder.requests
    relisted = recorder.seen[2:]
    assert set(relisted) == {(Change.LISTED, f"{ns}/kept"), (Change.LISTED, f"{ns}/made-meanwhile"),
                             (Change.VANISHED, f"{ns}/deleted-meanwhile")} and len(relisted) == 3, recorder.seen
    assert relisted[-1] == (Change.VANISHED, f"{ns}/deleted-meanwhile"), "vanished once the list is whole"


def test_one_named_object_is_read_with_a_get_and_watched_from_before_it_exists(cluster: Cluster) -> None:
    ns = "reflect-named"
    admin = namespace(cluster, ns, "neighbour")
    recorder = Recorder()

    async def go() -> None:
        async with direct(cluster.admin_kubeconfig) as api:
            reflector = recorder.reflector(api, configmaps(ns, name="wanted"))
            await reflector.list()
            assert recorder.seen == [] and recorder.synced == 1  # 404: nothing there yet
            async with running(reflector):
                await until("the watch", lambda: "watch" in recorder.requests)
                admin.create(configmap(ns, "wanted"))
                admin.delete(ConfigMap, "wanted", namespace=ns)
                await until("its deletion", lambda: (Change.DELETED, f"{ns}/wanted") in recorder.seen)

    asyncio.run(go())
    assert recorder.seen == [(Change.ADDED, f"{ns}/wanted"), (Change.DELETED, f"{ns}/wanted")]
    assert recorder.requests[:2] == ["get", "watch"]


def test_a_refused_watch_lists_again_with_one_warning_per_streak(cluster: Cluster, proxy: FaultProxy, tmp_path: Path,
                                                                caplog: pytest.LogCaptureFixture) -> None:
    ns = "reflect-refused"
    namespace(cluster, ns)
    recorder = Recorder()

    async def go() -> None:
        async with direct(proxy.kubeconfig(tmp_path / "kubeconfig", ADMIN_TOKEN, "admin")) as api:
            reflector = await recorder.listed(api, configmaps(ns))
            proxy.refuse(500)
            async with running(reflector):
                await until("three refused tries", lambda: len(recorder.requests) >= 5)  # the fifth: after three failed
                proxy.heal()
                await until("listed again", lambda: recorder.synced == 2)

    with caplog.at_level(logging.DEBUG, logger="route_monitor.kube.reflector"):
        asyncio.run(go())
    assert recorder.requests[:3] == ["list", "watch", "list"], recorder.requests
    tries = [r for r in caplog.records if f"ConfigMap watch in namespace {ns} failed" in r.getMessage()]
    assert len(tries) >= 3 and [r.levelname for r in tries][:2] == ["WARNING", "DEBUG"], caplog.text
    assert f"ConfigMap watch in namespace {ns} works again after" in caplog.text
