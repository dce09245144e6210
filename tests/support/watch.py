"""A recording watch of one namespace's RouteMonitors, from a resourceVersion on, on a thread.

For tests that must show that nothing was written: every change of a RouteMonitor (a status
patch too) is an event of the watch, in the order the API server committed it. The API server
ends the watch after ``seconds``; :meth:`MonitorWatch.close` ends it sooner.
"""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx

from alert_rules import names
from tests.support.cluster import ADMIN_TOKEN, Cluster


class MonitorWatch:
    def __init__(self, cluster: Cluster, namespace: str, resource_version: str, seconds: int = 300) -> None:
        self.events: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._client = httpx.Client(verify=False, timeout=httpx.Timeout(10, read=None),
                                    headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        self._url = f"{cluster.server}/apis/{names.GROUP}/{names.VERSION}/namespaces/{namespace}/{names.PLURAL}"
        self._params = {"watch": "1", "resourceVersion": resource_version, "timeoutSeconds": str(seconds)}
        self._started = threading.Event()
        self.error: BaseException | None = None
        """Why the watch ended before :meth:`close` (a refusal, an ERROR event), if it did."""
        self._closing = False
        self._thread = threading.Thread(target=self._run, daemon=True, name=f"watch {namespace}")
        self._thread.start()
        if not self._started.wait(10):
            raise TimeoutError(f"the RouteMonitor watch of {namespace} did not start: {self.error!r}")

    def _run(self) -> None:
        try:
            with self._client.stream("GET", self._url, params=self._params) as response:
                response.raise_for_status()
                self._started.set()
                for line in response.iter_lines():
                    event = json.loads(line) if line else None
                    if event is not None and event["type"] == "ERROR":  # e.g. 410: the version is too old
                        raise RuntimeError(f"the watch ended: {event['object'].get('message')}")
                    if event is not None:
                        with self._lock:
                            self.events.append(event)
        except Exception as e:
            if not self._closing:  # else: closed by close()
                self.error = e
        finally:
            self._started.set()

    def seen(self) -> list[tuple[str, str, str]]:
        """``(type, name, resourceVersion)`` of each event so far."""
        with self._lock:
            return [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"])
                    for e in self.events]

    def statuses(self, name: str) -> list[dict[str, Any]]:
        """The statuses ``name`` went through, as the events carried them."""
        with self._lock:
            return [e["object"].get("status") or {} for e in self.events if e["object"]["metadata"]["name"] == name]

    def close(self) -> None:
        self._closing = True
        self._client.close()
        self._thread.join(2)  # a read blocked in the thread may outlive the close: the server ends it at timeoutSeconds
