"""What ``standalone`` (and ``demo``) monitor, read from YAML files: specs with resolved targets.

:func:`plan` loads the files, collects monitors (``route_monitor.files.manifests``) and resolves each
target with the same table as the operator (:mod:`route_monitor.targets.sources`), from the objects in the
same files: URL targets as written, Routes from ``spec.host``/``spec.tls``/``spec.path``, Services
as their cluster DNS name (or ``--service-url``).
Every problem names the file, the object and the field; one bad object never hides the others.
:func:`fingerprint` tells when the files changed (polling mtimes and sizes).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from alert_rules.model import DEFAULT_EVALUATION_MS
from alert_rules.tiles import DEFAULT_TILE_MS
from route_monitor.files import filecreds, manifestfindings, manifests
from route_monitor.files.manifests import Manifest, ManifestError
from route_monitor.spec import urls
from route_monitor.spec.monitor import MonitorSpec, ServiceRef, UrlTarget
from route_monitor.spec.paths import combine, default_ingress_class, url_paths
from route_monitor.spec.protocol import url_for
from route_monitor.targets import sources
from route_monitor.targets.credentials import CredentialError
from route_monitor.targets.resolve import ResolvedTarget, TargetError, resolve_url
from route_monitor.targets.sources_fields import InvalidSource

Key = tuple[str, str]
ELSEWHERE = (" (the operator finds it in the cluster; standalone, which reads targets from its files only, "
             "would not probe this monitor)")
"""What ``check`` adds to a target that is not in the files (:attr:`Options.cluster_targets`)."""


@dataclass(frozen=True)
class Planned:
    spec: MonitorSpec
    target: ResolvedTarget
    source: str


@dataclass
class Plan:
    monitors: dict[Key, Planned] = field(default_factory=dict)
    problems: list[ManifestError] = field(default_factory=list)
    failed: set[Key] = field(default_factory=set)
    """Monitors named in the files that have an error (a reload keeps their last good spec)."""
    files: list[Path] = field(default_factory=list)
    """Credential files the monitors read (``route_monitor.files.filecreds``): a change reloads."""
    sources: dict[Key, str] = field(default_factory=dict)
    """Monitor key -> the manifest it came from (``path``, ``path#N``)."""
    valid: list[MonitorSpec] = field(default_factory=list)
    """Every monitor without an error, in key order (what ``check`` explains): those in
    :attr:`monitors`, and with :attr:`Options.cluster_targets` those whose target is elsewhere."""


@dataclass(frozen=True)
class Options:
    service_urls: Mapping[Key, str] = field(default_factory=dict)
    """(namespace, Service name) -> URL to probe instead of the Service's cluster DNS name."""
    cluster_domain: str = "cluster.local"
    tile_ms: int = DEFAULT_TILE_MS
    """``--tile``: the generated rules' tile (``alert_rules.tiles``), which findings check against each interval."""
    evaluation_ms: int = DEFAULT_EVALUATION_MS
    """``--evaluation-interval``: Prometheus' evaluation interval (``alert_rules.path_rules.settle_ms``)."""
    cluster_targets: bool = False
    """``check``: the files are meant for the operator, which finds a target (or a Gateway) that
    is not in them in the cluster: a warning, and the monitor is valid. ``standalone`` resolves
    every target from its files: an error, and the monitor is not probed."""


def parse_service_urls(items: Iterable[str]) -> dict[Key, str]:
    """``["shop/payments=http://127.0.0.1:8080"]`` -> ``{("shop", "payments"): "http://..."}``."""
    out: dict[Key, str] = {}
    for item in items:
        ref, sep, url = item.partition("=")
        namespace, slash, name = ref.partition("/")
        if not (sep and slash and namespace and name and url.startswith(("http://", "https://"))):
            raise ValueError(f"--service-url {urls.redact(item)!r}: expected NAMESPACE/NAME=http(s)://HOST[:PORT]")
        problem = urls.url_problem(url)
        if problem is not None:
            raise ValueError(f"--service-url {urls.redact(item)!r}: {problem}")
        out[(namespace, name)] = url
    return out


def _resolve(spec: MonitorSpec, found: manifests.Collection, options: Options) -> ResolvedTarget:
    t = spec.target
    ctx = sources.Context(lookup=found.lookup, cluster_domain=options.cluster_domain,
                          missing="is not in the given files", from_files=True,
                          default_ingress_class=default_ingress_class(found.objects.get("ingressclass", {}).values()))
    if isinstance(t, ServiceRef) and found.lookup("service", (spec.namespace, t.name)) is not None:
        override = options.service_urls.get((spec.namespace, t.name))
        if override is not None:  # where the Service is reached from here, in the protocol its port declares
            declared = sources.resolve_target(t, spec.namespace, spec.path, ctx)
            url = resolve_url(UrlTarget(override), spec.path).url
            if declared.protocol is not None:
                url = url_for(url, declared.protocol[0])
            return replace(declared, url=url, paths=combine(url_paths(url), spec.paths))
    return sources.resolve_target(t, spec.namespace, spec.path, ctx, spec.paths)


def _source_problems(e: InvalidSource, doc: Manifest, found: manifests.Collection,
                     known: list[ManifestError]) -> list[ManifestError]:
    """One line per field of the wrong shape, on the object that has it (once, however many
    monitors read it), and for a RouteMonitor one on its ``spec.target`` naming that object."""
    kind, namespace, name = e.ref
    origin = found.origins.get((kind, (namespace, name)))
    lines = manifests.field_errors(origin, e) if origin is not None else []
    out = [line for line in lines if line not in known]
    if origin is None or origin.source != doc.source:
        what = f"{sources.kind_name(kind)} {namespace}/{name}"
        out.append(doc.problem("spec.target", f"InvalidSource: {what} has fields of the wrong "
                               f"shape ({', '.join(f.field for f in e.errors)})"))
    return out


def _key_of(ref: str) -> Key | None:
    parts = ref.split("/")
    return (parts[1], parts[2]) if len(parts) == 3 else None


def plan(paths: Iterable[str | Path], options: Options | None = None) -> Plan:
    options = options or Options()
    loaded, errors = manifests.load(paths)
    found = manifests.collect(loaded)
    out = Plan(problems=[*errors, *found.problems, *manifestfindings.finding_problems(loaded, found, options.tile_ms)],
               sources=dict(found.sources))
    for p in found.problems:
        key = _key_of(p.ref)
        if key is not None and not p.warning:
            out.failed.add(key)
    by_source = {m.source: m for m in loaded}
    out.sources = dict(found.sources)
    for spec in found.monitors:
        _plan_one(out, spec, by_source[found.sources[spec.key]], found, options)
    out.problems.sort(key=lambda p: (p.source, p.line or 0))
    return out


def _plan_one(out: Plan, spec: MonitorSpec, doc: Manifest, found: manifests.Collection, options: Options) -> None:
    """Resolve one monitor's target and read its credentials, with every problem of both."""
    problems: list[ManifestError] = []
    source = doc.source
    target = None
    try:
        target = _resolve(spec, found, options)
    except TargetError as e:
        elsewhere = e.missing and options.cluster_targets
        problems.append(doc.problem("spec.target", f"{e.reason}: {e.message}" + (ELSEWHERE if elsewhere else ""),
                                    elsewhere))
    except InvalidSource as e:
        problems.extend(_source_problems(e, doc, found, out.problems))
    out.files.extend(filecreds.files_of(spec, source))
    credentials = None
    try:
        credentials = filecreds.read_files(spec, source)
    except CredentialError as e:
        problems.append(doc.problem(e.field, f"{e.reason}: {e.message}"))
    out.problems.extend(problems)
    if any(not p.warning for p in problems):
        out.failed.add(spec.key)
        return
    out.valid.append(spec)
    if target is not None:
        out.monitors[spec.key] = Planned(spec, replace(target, credentials=credentials), source)


def fingerprint(paths: Iterable[str | Path]) -> tuple[tuple[str, int, int], ...]:
    """(path, mtime_ns, size) of every manifest file: changes when any file is edited, added or removed."""
    out = []
    for p in map(Path, paths):
        files = sorted(f for f in p.rglob("*") if f.suffix in manifests.YAML_SUFFIXES) if p.is_dir() else [p]
        for f in files:
            try:
                st = f.stat()
            except OSError:
                out.append((str(f), -1, -1))
                continue
            out.append((str(f), st.st_mtime_ns, st.st_size))
    return tuple(out)
