"""Read manifests from YAML files and folders: RouteMonitors and annotated sources (Routes,
Services, ...: :data:`route_monitor.targets.sources.SOURCES`).

``load`` reads files (multi-document YAML, ``kind: List``); ``collect`` turns what was read
into monitor specs, keeping the sources and what they depend on for target resolution. Every problem is a
:class:`ManifestError` naming the file, the object and the field; an invalid object gives one per
field error (all at once), and one bad object never hides the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from alert_rules import names
from alert_rules.fielderrors import FieldError
from alert_rules.model import InvalidSpec
from route_monitor.files import docobjects, yamlread
from route_monitor.spec import checked
from route_monitor.spec.monitor import MonitorSpec, is_routemonitor
from route_monitor.targets import sources, vet
from route_monitor.targets.annotations import annotations_of, is_opted_in, monitor_spec
from route_monitor.targets.sources import Key, key_of

YAML_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class ManifestError:
    """One problem, structured for any output: ``source`` is the file, ``line`` the line in it of
    the field (or of the object when there is no field), ``ref`` the object (``Kind/ns/name``),
    ``suggestion`` what the user probably meant (also said in ``message``)."""

    source: str
    ref: str
    field: str
    message: str
    warning: bool = False
    line: int | None = None
    suggestion: str = ""

    @property
    def location(self) -> str:
        return f"{self.source}:{self.line}" if self.line else self.source

    def __str__(self) -> str:
        level = "warning" if self.warning else "error"
        where = f"{self.ref}: " if self.ref else ""
        fld = f"{self.field}: " if self.field else ""
        return f"{self.location}: {level}: {where}{fld}{self.message}"


@dataclass(frozen=True)
class Manifest:
    source: str
    """``path``, ``path#N`` for the N-th document of a multi-document file, ``path#N.items[j]``:
    unique among everything read (problems name the file and the line instead)."""
    obj: Mapping[str, Any]
    doc: yamlread.Document | None = None
    file: str = ""

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def ref(self) -> str:
        meta = self.obj.get("metadata") or {}
        return f"{self.kind}/{meta.get('namespace') or 'default'}/{meta.get('name')}"

    def problem(self, field: str, message: str, warning: bool = False, suggestion: str = "") -> ManifestError:
        """A problem with ``field`` of this object, at the field's line in its file."""
        line = None if self.doc is None else self.doc.line_of(field) if field else self.doc.line
        return ManifestError(self.file or self.source.split("#", 1)[0], self.ref, field, message, warning, line,
                             suggestion)

    def field_problem(self, f: FieldError, warning: bool = False) -> ManifestError:
        return self.problem(f.field, f.detail, warning, f.suggestion)


@dataclass
class Collection:
    monitors: list[MonitorSpec] = field(default_factory=list)
    sources: dict[tuple[str, str], str] = field(default_factory=dict)
    """monitor key -> where it came from"""
    objects: dict[str, dict[Key, Mapping[str, Any]]] = field(default_factory=dict)
    """kind (a source's or a dependency's) -> (namespace, name) -> the object as read."""
    origins: dict[tuple[str, Key], Manifest] = field(default_factory=dict)
    """(kind, (namespace, name)) -> the manifest each object of :attr:`objects` was read from."""
    problems: list[ManifestError] = field(default_factory=list)

    def lookup(self, kind: str, key: Key) -> Mapping[str, Any] | None:
        return self.objects.get(kind, {}).get(key)

    @property
    def errors(self) -> list[ManifestError]:
        return [p for p in self.problems if not p.warning]


def _files(paths: Iterable[str | Path]) -> Iterable[Path]:
    for p in map(Path, paths):
        if p.is_dir():
            yield from sorted(f for f in p.rglob("*") if f.is_file() and f.suffix in YAML_SUFFIXES)
        else:
            yield p


def load(paths: Iterable[str | Path]) -> tuple[list[Manifest], list[ManifestError]]:
    """Every object of every document that parses, and a problem for each part that is not one."""
    manifests: list[Manifest] = []
    errors: list[ManifestError] = []
    for path in _files(paths):
        docs, problems = yamlread.read_documents(path)
        errors += [ManifestError(p.file, p.ref, p.field, p.message, line=p.line) for p in problems]
        multi = len(docs) + len(problems) > 1
        for i, doc in enumerate(docs):
            if doc.data is None:
                continue
            for part in docobjects.objects_of(doc, f"{path}#{i}" if multi else str(path)):
                if part.obj is None:
                    line = part.doc.line_of(part.field) if part.field else part.doc.line
                    errors.append(ManifestError(str(path), "", part.field, part.problem, line=line))
                else:
                    manifests.append(Manifest(part.source, part.obj, part.doc, str(path)))
    return manifests, errors


_READ_KINDS = {**{s.kind_name: s.kind for s in sources.SOURCES},
               **{kind_name: kind for kind, (_, kind_name, _) in sources.DEPENDENCIES.items()}}
"""Kind in a manifest -> the kind it is kept as."""


def _annotated_spec(obj: Mapping[str, Any], kind: str) -> MonitorSpec:
    spec = monitor_spec(obj, kind)
    wanted = annotations_of(obj).get(names.ANN_HOST, "")
    problem = sources.host_problem(kind, obj, wanted)
    if problem is not None:
        if wanted:
            raise InvalidSpec(f"metadata.annotations[{names.ANN_HOST}]", wanted, f"{problem.reason}: {problem.message}")
        hosts_field = "spec.rules[].host" if kind == "ingress" else "spec.hostnames"
        hosts = sources.BY_KIND[kind].hosts
        raise InvalidSpec(hosts_field, hosts(obj) if hosts else [], f"{problem.reason}: {problem.message}")
    return spec


def field_errors(m: Manifest, e: InvalidSpec) -> list[ManifestError]:
    """One problem per field error of an invalid object (at most ``MAX_ERRORS``, then how many more)."""
    out = [m.field_problem(f) for f in e.errors]
    if e.omitted:
        out.append(m.problem("", f"{e.omitted} more field error(s) not shown"))
    return out


def vetted(m: Manifest) -> tuple[bool, list[ManifestError]]:
    """(whether the object is read at all, what :mod:`route_monitor.targets.vet` says about it)."""
    kind = vet.kind_problem(m.obj)
    if kind is not None:
        return False, [m.field_problem(kind)]
    return True, ([m.field_problem(f) for f in vet.unknown_annotations(m.obj)] +
                  [m.field_problem(f, warning=True) for f in vet.ignored_annotations(m.obj)])


def collect(manifests: Iterable[Manifest]) -> Collection:
    """Monitors from RouteMonitors and annotated sources (the earlier row of ``SOURCES`` wins)."""
    out = Collection()
    annotated: dict[Key, dict[str, Manifest]] = {}
    explicit: list[Manifest] = []
    for m in manifests:
        read, problems = vetted(m)
        out.problems += problems
        if not read:
            continue
        if is_routemonitor(m.obj):
            explicit.append(m)
        elif m.kind in _READ_KINDS:
            kind = _READ_KINDS[m.kind]
            out.objects.setdefault(kind, {})[key_of(m.obj)] = m.obj
            out.origins[(kind, key_of(m.obj))] = m
            if kind in sources.BY_KIND and is_opted_in(m.obj):
                annotated.setdefault(key_of(m.obj), {})[kind] = m
    candidates: list[tuple[Manifest, Any]] = [(m, lambda m=m: checked.routemonitor(m.obj)) for m in explicit]
    for by_kind in annotated.values():
        winner = sources.winner(by_kind)
        assert winner is not None
        for kind, m in by_kind.items():
            if kind == winner.kind:
                candidates.append((m, lambda m=m, kind=kind: _annotated_spec(m.obj, kind)))
                continue
            out.problems.append(m.problem(
                "", f"{sources.article(winner.kind_name)} of the same name is also annotated: the "
                f"{winner.kind_name} is monitored, this {sources.BY_KIND[kind].kind_name} is not", True))
    by_source = {m.source: m for m, _ in candidates}
    for m, parse in candidates:
        try:
            spec: MonitorSpec = parse()
        except InvalidSpec as e:
            meant = vet.meant_annotations(m.obj)  # a misspelt annotation is one error, not also the one it lacks
            kept = [f for f in e.errors if f.field not in meant]
            if kept:
                out.problems.extend(field_errors(m, InvalidSpec.of(kept, e.omitted)))
            continue
        if spec.key in out.sources:
            first = by_source[out.sources[spec.key]]
            out.problems.append(m.problem("metadata.name", "a monitor of this name already comes from "
                                          f"{first.problem('', '').location}; this one is ignored"))
            continue
        out.sources[spec.key] = m.source
        out.monitors.append(spec)
    out.monitors.sort(key=lambda s: s.key)
    return out
