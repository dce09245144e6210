"""The fleet benchmark's readings (``benchmarks/fleet_math.py``) compute what RESULTS-fleet.md says.

Covers: bytes received summed per process over its sockets in ``ss -tinpH`` output (other
processes' sockets and a socket without TCP info left out); watch events, their bytes and the
watchers per kind from an apiserver page; requests by verb and resource over every resource;
per-second rates of only what grew; etcd's prefix range (the end is the prefix's last byte + 1).
"""

from __future__ import annotations

import base64

from benchmarks import fleet_math as fm

SS = """\
ESTAB 0 0 127.0.0.1:40000 127.0.0.1:6443 users:(("route-monitor",pid=101,fd=7))
\t cubic wscale:7,7 rto:201 bytes_sent:900 bytes_acked:900 bytes_received:1500 segs_out:10
ESTAB 0 0 127.0.0.1:40001 127.0.0.1:6443 users:(("route-monitor",pid=101,fd=8))
\t cubic bytes_sent:10 bytes_received:250 segs_out:2
ESTAB 0 0 127.0.0.1:40002 127.0.0.1:6443 users:(("route-monitor",pid=202,fd=7))
\t cubic bytes_sent:10 bytes_received:70
ESTAB 0 0 127.0.0.1:40003 127.0.0.1:6443 users:(("python",pid=303,fd=3))
\t cubic bytes_received:999999
ESTAB 0 0 127.0.0.1:40004 127.0.0.1:6443 users:(("route-monitor",pid=202,fd=9))
\t cubic bytes_sent:0 segs_out:1
"""

PAGE = """\
# TYPE apiserver_watch_events_total counter
apiserver_watch_events_total{group="",kind="Lease",version="v1"} 30
apiserver_watch_events_total{group="route.openshift.io",kind="Route",version="v1"} 12
# TYPE apiserver_watch_events_sizes histogram
apiserver_watch_events_sizes_bucket{group="",kind="Lease",version="v1",le="+Inf"} 30
apiserver_watch_events_sizes_sum{group="",kind="Lease",version="v1"} 15000
apiserver_watch_events_sizes_count{group="",kind="Lease",version="v1"} 30
# TYPE apiserver_registered_watchers gauge
apiserver_registered_watchers{group="",kind="Lease",version="v1"} 4
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PATCH",version="v1"} 10
apiserver_request_total{code="409",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PATCH",version="v1"} 2
apiserver_request_total{code="200",component="apiserver",dry_run="",group="routemonitor.io",resource="routemonitors",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 5
"""


def test_bytes_received_are_summed_per_process_over_its_sockets() -> None:
    assert fm.ss_received(SS, [101, 202]) == {101: 1750, 202: 70}


def test_watch_events_bytes_and_watchers_per_kind() -> None:
    got = fm.watch_counts(PAGE)
    assert got["Lease"] == {"events": 30.0, "bytes": 15000.0, "watchers": 4.0}
    assert got["Route"] == {"events": 12.0, "bytes": 0.0, "watchers": 0.0}


def test_requests_by_verb_and_resource_and_their_rate() -> None:
    before = fm.all_requests(PAGE)
    assert before == {"PATCH leases": 12.0, "PATCH routemonitors/status": 5.0}
    after = {"PATCH leases": 24.0, "PATCH routemonitors/status": 5.0, "GET routes": 3.0}
    assert fm.rate(before, after, 6.0) == {"GET routes": 0.5, "PATCH leases": 2.0}


def test_prefix_range_ends_after_every_key_under_the_prefix() -> None:
    r = fm.prefix_range("/registry/services/specs/")
    assert base64.b64decode(r["key"]) == b"/registry/services/specs/"
    assert base64.b64decode(r["range_end"]) == b"/registry/services/specs0"
