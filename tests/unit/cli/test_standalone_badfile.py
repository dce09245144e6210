"""``standalone``: a file that turns unreadable on reload affects only its own monitors (issue 15).

Before, a file that was not UTF-8 (or held a YAML value Python cannot construct) failed every
reload ("reload failed, keeping the running monitors", naming no file): a deleted monitor kept
probing, a new one was never picked up. Now the bad file is reported by name and every other
file's changes apply.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import servers
from tests.support.net import wait_for
from tests.support.servers import Targets
from tests.unit.cli import test_standalone
from tests.unit.cli.test_standalone import Proc, ok_probes, routemonitor

targets = servers.targets
folder = test_standalone.folder
proc_factory = test_standalone.proc_factory

pytestmark = pytest.mark.timeout(60)


@pytest.mark.parametrize("bad", [
    pytest.param(b"\xff\xfe not utf-8", id="not-utf8"),
    pytest.param(b"a: !!timestamp 2020-02-31\n", id="unconstructible-value"),
    pytest.param(b"kind: List\nitems: [1, 2]\n", id="list-of-scalars"),
])
def test_a_bad_file_does_not_freeze_the_others(targets: Targets, folder: Path, proc_factory: list[Proc],
                                               bad: bytes) -> None:
    url = targets.http()
    (folder / "a.yaml").write_text(routemonitor("alpha", url) + "---\n" + routemonitor("beta", url))
    (folder / "c.yaml").write_text(routemonitor("gamma", url))
    proc = Proc(folder)
    proc_factory.append(proc)
    wait_for(lambda: ok_probes(proc, "beta") >= 1 and ok_probes(proc, "gamma") >= 1, timeout=20, what="probes")
    (folder / "c.yaml").write_bytes(bad)
    (folder / "a.yaml").write_text(routemonitor("alpha", url) + "---\n" + routemonitor("delta", url))
    wait_for(lambda: ok_probes(proc, "delta") >= 1, timeout=20, what="the new monitor in the good file")
    wait_for(lambda: proc.value("route_monitor_probes_total", namespace="shop", monitor="beta",
                                result="success") is None, timeout=10, what="the deleted monitor gone")
    assert "c.yaml" in proc.stderr and "reload failed" not in proc.stderr
    assert proc.stop() == 0
