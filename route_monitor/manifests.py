"""Read manifests from YAML files and folders: RouteMonitors and annotated sources (Routes,
Services, ...: :data:`route_monitor.sources.SOURCES`).

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

from alert_rules import findings, names, tiles
from alert_rules.model import InvalidSpec
from route_monitor import sources, yamlread
from route_monitor.annotations import annotation_for, annotations_of, is_opted_in, monitor_spec
from route_monitor.sources import Key, key_of
from route_monitor.spec import MonitorSpec, is_routemonitor, parse_routemonitor

YAML_SUFFIXES = (".yaml", ".yml", ".json")


@dataclass(frozen=True)
class Manifest:
    source: str
    """``path`` or ``path#N`` for the N-th document of a multi-document file."""
    obj: Mapping[str, Any]

    @property
    def kind(self) -> str:
        return str(self.obj.get("kind", ""))

    @property
    def ref(self) -> str:
        meta = self.obj.get("metadata") or {}
        return f"{self.kind}/{meta.get('namespace') or 'default'}/{meta.get('name')}"


@dataclass(frozen=True)
class ManifestError:
    source: str
    ref: str
    field: str
    message: str
    warning: bool = False

    def __str__(self) -> str:
        level = "warning" if self.warning else "error"
        where = f"{self.ref}: " if self.ref else ""
        fld = f"{self.field}: " if self.field else ""
        return f"{self.source}: {level}: {where}{fld}{self.message}"


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
    manifests: list[Manifest] = []
    errors: list[ManifestError] = []
    for path in _files(paths):
        docs, problem = yamlread.read_documents(path)
        if problem is not None:
            errors.append(ManifestError(problem.location, "", "", problem.message))
            continue
        multi = len(docs) > 1
        for i, doc in enumerate(docs):
            if doc is None:
                continue
            for src, obj, why in yamlread.objects_of(doc, f"{path}#{i}" if multi else str(path)):
                if obj is None:
                    errors.append(ManifestError(src, "", "", why))
                else:
                    manifests.append(Manifest(src, obj))
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
    out = [ManifestError(m.source, m.ref, f.field, f"{f.reason} (got {f.got})") for f in e.errors]
    if e.omitted:
        out.append(ManifestError(m.source, m.ref, "", f"{e.omitted} more field error(s) not shown"))
    return out


def collect(manifests: Iterable[Manifest]) -> Collection:
    """Monitors from RouteMonitors and annotated sources (the earlier row of ``SOURCES`` wins)."""
    out = Collection()
    annotated: dict[Key, dict[str, Manifest]] = {}
    explicit: list[Manifest] = []
    for m in manifests:
        if is_routemonitor(m.obj):
            explicit.append(m)
        elif m.kind in _READ_KINDS:
            kind = _READ_KINDS[m.kind]
            out.objects.setdefault(kind, {})[key_of(m.obj)] = m.obj
            out.origins[(kind, key_of(m.obj))] = m
            if kind in sources.BY_KIND and is_opted_in(m.obj):
                annotated.setdefault(key_of(m.obj), {})[kind] = m
    candidates: list[tuple[Manifest, Any]] = [(m, lambda m=m: parse_routemonitor(m.obj)) for m in explicit]
    for by_kind in annotated.values():
        winner = sources.winner(by_kind)
        assert winner is not None
        for kind, m in by_kind.items():
            if kind == winner.kind:
                candidates.append((m, lambda m=m, kind=kind: _annotated_spec(m.obj, kind)))
                continue
            out.problems.append(ManifestError(
                m.source, m.ref, "", f"{sources.article(winner.kind_name)} of the same name is also annotated: the "
                f"{winner.kind_name} is monitored, this {sources.BY_KIND[kind].kind_name} is not", True))
    for m, parse in candidates:
        try:
            spec: MonitorSpec = parse()
        except InvalidSpec as e:
            out.problems.extend(field_errors(m, e))
            continue
        if spec.key in out.sources:
            out.problems.append(ManifestError(m.source, m.ref, "metadata.name", "a monitor of this name "
                                              f"already comes from {out.sources[spec.key]}; this one is ignored"))
            continue
        out.sources[spec.key] = m.source
        out.monitors.append(spec)
    out.monitors.sort(key=lambda s: s.key)
    return out


def finding_problems(docs: Iterable[Manifest], found: Collection,
                     tile_ms: int = tiles.DEFAULT_TILE_MS) -> list[ManifestError]:
    """What the rule generator finds about each monitor's objective (``alert_rules.findings``:
    e.g. a page that can never fire), as problems naming the file, the object and the field
    the user wrote: the annotation for monitors made from an annotated source. ``tile_ms``: the
    rules' tile (``--tile``), which must hold enough of each monitor's probes."""
    by_source = {d.source: d for d in docs}
    out: list[ManifestError] = []
    for spec in found.monitors:
        source = found.sources.get(spec.key, "")
        doc = by_source.get(source)
        ref = doc.ref if doc else f"RouteMonitor/{spec.namespace}/{spec.name}"
        annotated = doc is not None and doc.kind in sources.BY_KIND_NAME
        for f in findings(spec.slo(tile_ms)):
            annotation = annotation_for(f.field) if annotated else None
            field_name = f"metadata.annotations[{annotation}]" if annotation else f.field
            out.append(ManifestError(source, ref, field_name, f.message, f.severity == "warning"))
    return out
