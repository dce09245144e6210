"""The layering and lint rules hold: ``lint-imports`` (``.importlinter``: the generator is pure,
the probe engine knows no kopf) and ``ruff check`` over the repository, ``mypy --strict`` over both packages, run as tests so that a
broken layer fails the suite like any other regression."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
BIN = Path(sys.executable).parent


@pytest.mark.parametrize(("tool", "args"), [
    pytest.param("lint-imports", [], id="import-layers"),
    pytest.param("ruff", ["check", "."], id="ruff"),
    pytest.param("mypy", [], id="mypy-strict"),  # packages and strictness from pyproject.toml
])
def test_tool_passes(tool: str, args: list[str]) -> None:
    proc = subprocess.run([str(BIN / tool), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
