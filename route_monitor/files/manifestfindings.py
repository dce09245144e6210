"""The rule generator's findings on monitors read from files, as problems on what the user wrote.

``alert_rules.findings`` judges a monitor's objective (a page that can never fire, a period
shorter than the alert windows, an objective written as a ratio); :func:`finding_problems`
puts each on the file, line, object and field of its manifest: for a monitor made from an
annotated object, the annotation that set the field.
"""

from __future__ import annotations

from collections.abc import Iterable

from alert_rules import findings, tiles
from route_monitor.files.manifests import Collection, Manifest, ManifestError
from route_monitor.targets import sources
from route_monitor.targets.annotations import annotation_for


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
            if doc is None:
                out.append(ManifestError(source, ref, field_name, f.message, f.severity == "warning"))
            else:
                out.append(doc.problem(field_name, f.message, f.severity == "warning", f.suggestion))
    return out
