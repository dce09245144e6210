"""The operator's side of ``benchmarks.memory_per_monitor``: ``route-monitor`` under tracemalloc.

    python -m benchmarks.memory_child SNAPSHOT_DIR FRAMES -- operator --metrics-port ...

On each SIGUSR1 (after a full collection) it writes a heap snapshot (when ``FRAMES`` > 0) and the
allocators' figures into ``SNAPSHOT_DIR``; ``$MEMORY_SAMPLE_WORLD`` and ``$MEMORY_REFERRERS`` add
the debugging aids described in ``benchmarks/README.md``.
"""

from __future__ import annotations

import gc
import json
import os
import signal
import sys
import tempfile
import tracemalloc
from collections.abc import Sequence
from pathlib import Path
from typing import Any

SIGNAL = signal.SIGUSR1


def allocators() -> dict[str, int]:
    """Where the process's memory sits: pymalloc's arenas (small objects) and glibc's heap (the
    rest: objects over 512 bytes, C extensions' buffers), from ``sys._debugmallocstats`` and
    ``mallinfo2``."""
    out: dict[str, int] = {}
    with tempfile.TemporaryFile("w+") as f:
        saved = os.dup(2)
        try:
            os.dup2(f.fileno(), 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        for line in f:
            cells = line.split()
            if len(cells) == 5 and all(c.isdigit() for c in cells):  # class size pools used avail
                out[f"size {int(cells[1]):3d}: free blocks"] = int(cells[1]) * int(cells[4])
                continue
            name, _, value = line.partition("=")
            label = {"# bytes in allocated blocks": "pymalloc_used",
                     "# bytes in available blocks": "pymalloc_free_blocks"}.get(name.strip())
            if label is None and "unused pools *" in name:
                label = "pymalloc_unused_pools"
            if label is None and "bytes/arena" in name:
                label = "pymalloc_arenas"
            if label is not None and label not in out:
                out[label] = int(value.strip().replace(",", ""))
    heap = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        if not line[:1].isupper():
            heap = line.rstrip().endswith("[heap]")
        elif heap and line.startswith("Rss:"):
            out["glibc_heap_resident"] = int(line.split()[1]) * 1024
    try:
        import ctypes

        class Mallinfo2(ctypes.Structure):
            _fields_ = [(n, ctypes.c_size_t) for n in ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks",
                                                        "fsmblks", "uordblks", "fordblks", "keepcost")]

        libc = ctypes.CDLL("libc.so.6")
        libc.mallinfo2.restype = Mallinfo2
        mi = libc.mallinfo2()
        out |= {"glibc_heap": mi.arena, "glibc_used": mi.uordblks, "glibc_free": mi.fordblks, "glibc_mmapped": mi.hblkhd}
    except (OSError, AttributeError):
        pass
    return out


def referrers(places: list[str], samples: int = 5) -> str:
    """What holds objects allocated at ``places`` (``file:line`` suffixes): the containers that
    refer to them, by type and where they were allocated, counted (a debugging aid for
    ``$MEMORY_REFERRERS``)."""
    held: dict[str, int] = {}
    frozen = gc.get_freeze_count()
    gc.unfreeze()  # search what gc.freeze() hid too (then frozen again, with whatever is alive now)
    everything = gc.get_objects()
    if frozen:
        gc.freeze()
    for holder in everything:
        for obj in gc.get_referents(holder):
            tb = tracemalloc.get_object_traceback(obj)
            if tb is None:
                continue
            where = f"{tb[-1].filename}:{tb[-1].lineno}"
            for p in places:
                if where.endswith(p):
                    htb = tracemalloc.get_object_traceback(holder)
                    hwhere = f"{htb[-1].filename.rsplit('/', 3)[-1]}:{htb[-1].lineno}" if htb else "?"
                    desc = f"{p} {type(obj).__name__} <- {type(holder).__name__} @{hwhere}"
                    held[desc] = held.get(desc, 0) + 1
    return "".join(f"{n:7d}  {d}\n" for d, n in sorted(held.items(), key=lambda kv: -kv[1])[:40])


def child(snapshots: Path, frames: int, argv: Sequence[str]) -> int:
    """``route-monitor`` with tracemalloc on (unless ``frames`` is 0); on each SIGUSR1 a heap
    snapshot (if tracing) and the allocators' figures are written to ``snapshots``."""
    from route_monitor.cli import main as cli

    taken = 0

    def snapshot(*_: Any) -> None:
        nonlocal taken
        gc.collect()
        path = snapshots / f"snap-{taken}"
        if frames > 0:
            tracemalloc.take_snapshot().dump(str(path) + ".pickle")
        (snapshots / f"alloc-{taken}.json").write_text(json.dumps(allocators()))
        if os.environ.get("MEMORY_SAMPLE_WORLD"):  # one object of each kind as the world keeps it
            import asyncio

            task = next(t for t in asyncio.all_tasks(asyncio.get_running_loop()) if t.get_name() == "supervisor")
            world = task.get_coro().cr_frame.f_locals["self"].world  # type: ignore[union-attr]
            sample = {kind: next(iter(objs.values()), None) for kind, objs in world.objects.items()}
            (snapshots / f"world-{taken}.json").write_text(json.dumps(sample, indent=1, default=str))
        if frames > 0 and os.environ.get("MEMORY_REFERRERS"):
            (snapshots / f"referrers-{taken}.txt").write_text(referrers(os.environ["MEMORY_REFERRERS"].split(",")))
        os.replace(str(path) + ".pickle" if frames > 0 else snapshots / f"alloc-{taken}.json", str(path) + ".done")
        taken += 1

    if frames > 0:
        tracemalloc.start(frames)
    signal.signal(SIGNAL, snapshot)
    return cli.main(list(argv))


if __name__ == "__main__":
    sep = sys.argv.index("--")
    sys.exit(child(Path(sys.argv[1]), int(sys.argv[2]), sys.argv[sep + 1:]))
