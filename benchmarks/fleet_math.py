"""What the 20,000-monitor fleet benchmark (``benchmarks/fleet_20k.py``) reads from ``ss``, the
apiserver's ``/metrics`` and etcd's JSON gateway: pure functions, no clock, no processes.

- :func:`ss_received`: TCP payload bytes each process has received on its connections to the
  apiserver (``ss -tinpH``; TLS records, so a little more than the JSON inside);
- :func:`watch_counts`: the apiserver's watch events sent, their encoded bytes and the watchers
  registered, per kind (``apiserver_watch_events_total``, ``apiserver_watch_events_sizes``,
  ``apiserver_registered_watchers``): every watcher of a kind is counted, the operators' and
  the controller-manager's and the benchmark's own alike;
- :func:`all_requests`: ``apiserver_request_total`` by ``VERB resource[/subresource]``, every resource;
- :func:`rate`: a per-second difference of two such counts;
- :func:`prefix_range`: etcd's ``[key, range_end)`` for every key under a prefix, base64 as its
  gateway takes them.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Collection, Mapping

from prometheus_client.parser import text_string_to_metric_families

_PID = re.compile(r"pid=(\d+)")
_RECEIVED = re.compile(r"bytes_received:(\d+)")


def ss_received(text: str, pids: Collection[int]) -> dict[int, int]:
    """pid -> bytes received over its sockets in ``ss -tinpH`` output (one line naming the
    socket's processes, then an indented line of its TCP info)."""
    out = {pid: 0 for pid in pids}
    owners: list[int] = []
    for line in text.splitlines():
        if not line.startswith(("\t", " ")):
            owners = [int(p) for p in _PID.findall(line) if int(p) in out]
            continue
        m = _RECEIVED.search(line)
        if m:
            for pid in set(owners):
                out[pid] += int(m.group(1))
    return out


WATCH_SERIES = ("apiserver_watch_events_total", "apiserver_watch_events_sizes_sum", "apiserver_registered_watchers")


def watch_counts(page: str) -> dict[str, dict[str, float]]:
    """kind -> {"events", "bytes", "watchers"} from an apiserver ``/metrics`` page."""
    field = dict(zip(WATCH_SERIES, ("events", "bytes", "watchers"), strict=True))
    kept = [line for line in page.splitlines() if line.split("{", 1)[0] in field]
    out: dict[str, dict[str, float]] = {}
    for family in text_string_to_metric_families("\n".join(kept) + "\n"):
        for s in family.samples:
            if s.name in field:
                kind = out.setdefault(s.labels.get("kind", "?"), {"events": 0.0, "bytes": 0.0, "watchers": 0.0})
                kind[field[s.name]] += s.value
    return out


def all_requests(page: str) -> dict[str, float]:
    """``VERB resource[/subresource]`` -> count, every resource (``apiserver_request_total``)."""
    kept = [line for line in page.splitlines() if line.startswith("apiserver_request_total{")]
    out: dict[str, float] = {}
    for family in text_string_to_metric_families("\n".join(kept) + "\n"):
        for s in family.samples:
            sub = f"/{s.labels['subresource']}" if s.labels.get("subresource") else ""
            key = f"{s.labels.get('verb')} {s.labels.get('resource', '')}{sub}"
            out[key] = out.get(key, 0.0) + s.value
    return out


def rate(before: Mapping[str, float], after: Mapping[str, float], seconds: float) -> dict[str, float]:
    """Per-second increase of each key that grew, rounded to 0.001."""
    return {k: round((after[k] - before.get(k, 0.0)) / seconds, 3)
            for k in sorted(after) if after[k] - before.get(k, 0.0) > 0}


def prefix_range(prefix: str) -> dict[str, str]:
    """etcd's range of every key starting with ``prefix`` (its last byte + 1 ends the range)."""
    raw = prefix.encode()
    end = raw[:-1] + bytes([raw[-1] + 1])
    return {"key": base64.b64encode(raw).decode(), "range_end": base64.b64encode(end).decode()}
