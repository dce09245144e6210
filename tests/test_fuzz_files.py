"""Property: ``check`` and ``rules`` survive any file (issue 15): raw bytes, and the examples'
YAML with generated edits (lines dropped, duplicated or cut, bytes flipped). Whatever the file
holds, the command returns 0 or 1 and every problem is one line naming the file; no exception
escapes (hypothesis reports any).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

from hypothesis import event, given, settings
from hypothesis import strategies as st

from route_monitor.cli import main
from tests.support.cluster import ROOT
from tests.support.fuzzing import examples

EXAMPLE_TEXTS = [p.read_bytes() for p in sorted((ROOT / "examples").glob("*.yaml"))]


@st.composite
def mutated(draw: st.DrawFn) -> bytes:
    lines = draw(st.sampled_from(EXAMPLE_TEXTS)).splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        op = draw(st.sampled_from(["drop", "dup", "cut", "flip", "indent", "insert"]))
        if op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "cut":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        elif op == "flip":
            line = bytearray(lines[i] or b" ")
            line[draw(st.integers(0, len(line) - 1))] = draw(st.integers(0, 255))
            lines[i] = bytes(line)
        elif op == "indent":
            lines[i] = b"  " + lines[i]
        else:
            lines.insert(i, draw(st.sampled_from([b"- 1\n", b"&a [*a]\n", b"!!python/object:os.system x\n",
                                                  b"metadata: 5\n", b"  name: a/b\n", b"items: [1]\n",
                                                  b"kind: List\n", b"---\n", b"\t\n"])))
    return b"".join(lines)


def run(command: str, content: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "fuzz.yaml"
        path.write_bytes(content)
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            code = main([command, str(path)])
        assert code in (0, 1), err.getvalue()[-2000:]
        event(f"exit {code}")
        for line in err.getvalue().splitlines():
            if ": error: " in line:
                assert line.startswith(str(path)) and len(line) <= 1200, line[:2000]


@settings(max_examples=examples(150))
@given(content=st.one_of(st.binary(max_size=400), mutated()), command=st.sampled_from(["check", "rules"]))
def test_any_file_gives_an_exit_code_and_one_line_problems(content: bytes, command: str) -> None:
    run(command, content)
