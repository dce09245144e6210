"""Debian's real ``promtool`` (Prometheus 2.42): ``check rules`` and ``test rules``.

:func:`run_many` runs independent promtool jobs in parallel (each is its own process), so
that table-driven scenario tests stay fast on two cores while every case is reported on its
own. Nothing here mocks promtool: the rule files and test documents are written to a folder
and promtool reads them as a user would.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

PROMTOOL = "promtool"


@dataclass(frozen=True)
class Result:
    returncode: int
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def require() -> str:
    path = shutil.which(PROMTOOL)
    if path is None:
        raise RuntimeError("promtool is missing: run scripts/bootstrap.sh (installs Debian's prometheus)")
    return path


def run(args: Sequence[str], cwd: Path, timeout: float = 240) -> Result:
    proc = subprocess.run([require(), *args], cwd=cwd, capture_output=True, text=True, timeout=timeout)
    return Result(proc.returncode, proc.stdout + proc.stderr)


def check_rules(path: Path) -> Result:
    """``promtool check rules --lint=all --lint-fatal``: syntax, templates, duplicate rules."""
    return run(["check", "rules", "--lint=all", "--lint-fatal", str(path)], cwd=path.parent)


@dataclass(frozen=True)
class Job:
    """One ``promtool test rules`` run: a rule file and a test document in their own folder."""

    name: str
    rules: str
    """Rule file text, written as ``rules.yml`` next to the test document."""
    tests: Mapping[str, Any]
    """The test document (its ``rule_files`` should be ``["rules.yml"]``)."""


def run_test_rules(job: Job, folder: Path) -> Result:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "rules.yml").write_text(job.rules, encoding="utf-8")
    (folder / "test.yml").write_text(yaml.safe_dump(dict(job.tests), sort_keys=False), encoding="utf-8")
    return run(["test", "rules", "test.yml"], cwd=folder)


def run_many(jobs: Sequence[Job], folder: Path) -> dict[str, Result]:
    """Run every job (in parallel, one promtool process each); results by job name."""
    workers = max(2, os.cpu_count() or 2)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = {j.name: pool.submit(run_test_rules, j, folder / f"job{i}") for i, j in enumerate(jobs)}
        return {name: f.result() for name, f in futures.items()}
