"""The fields of a target source that resolution reads, checked for shape before it reads them.

Objects come from the API server or from files as written. A Route whose ``spec.host`` is a
list, a Service whose ``spec.ports`` is a string or whose port is ``'80'``, an Ingress rule's
host that is a mapping...: :func:`check` raises one :class:`InvalidSource` with every such field
(``alert_rules.fielderrors``), each named as the user wrote it (``spec.host``,
``spec.ports[0].port``, ``spec.rules[0].host``, ``spec.hostnames``), and says which object
(:attr:`InvalidSource.ref`: a Gateway's fields are its own). Resolution
(:mod:`route_monitor.targets.resolve`, :mod:`route_monitor.targets.resolve_http`) reads only objects that passed.
Only ``null`` counts as absent: ``hostnames: 0`` is a wrong shape, not an empty list.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from alert_rules.fielderrors import Collect, InvalidSpec

Ref = tuple[str, str, str]
"""(kind, namespace, name) of an object, as in :mod:`route_monitor.targets.sources`."""


class InvalidSource(InvalidSpec):
    """Fields of a target source (or of an object it reads) have the wrong shape."""

    ref: Ref = ("", "", "")


def _mapping(c: Collect, obj: Mapping[str, Any], key: str, at: str) -> Mapping[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return value
    c.add(at + key, value, "expected a mapping")
    return {}


def _items(c: Collect, obj: Mapping[str, Any], key: str, at: str) -> list[tuple[str, Any]]:
    """(field, item) of a list field; a value that is no list is an error and has no items."""
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        c.add(at + key, value, "expected a list")
        return []
    return [(f"{at}{key}[{i}]", item) for i, item in enumerate(value)]


def _mappings(c: Collect, obj: Mapping[str, Any], key: str, at: str) -> list[tuple[str, Mapping[str, Any]]]:
    """(``field.``, item) of a list of mappings; an item that is no mapping is an error."""
    out = []
    for field, item in _items(c, obj, key, at):
        if isinstance(item, Mapping):
            out.append((field + ".", item))
        else:
            c.add(field, item, "expected a mapping")
    return out


def _strings(c: Collect, obj: Mapping[str, Any], at: str, *keys: str) -> None:
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            c.add(at + key, value, "expected a string")


def _port(c: Collect, obj: Mapping[str, Any], key: str, at: str) -> None:
    value = obj.get(key)
    if value is not None and (type(value) is not int or not 1 <= value <= 65535):
        c.add(at + key, value, "expected a port number (an integer 1-65535)")


def _conditions(c: Collect, obj: Mapping[str, Any], at: str) -> None:
    for field, cond in _mappings(c, obj, "conditions", at):
        _strings(c, cond, field, "type")


def _route(c: Collect, obj: Mapping[str, Any]) -> None:
    spec = _mapping(c, obj, "spec", "")
    _strings(c, spec, "spec.", "host", "path")
    _mapping(c, spec, "tls", "spec.")
    for field, ingress in _mappings(c, _mapping(c, obj, "status", ""), "ingress", "status."):
        _strings(c, ingress, field, "host")
        _conditions(c, ingress, field)


def _service(c: Collect, obj: Mapping[str, Any]) -> None:
    for field, port in _mappings(c, _mapping(c, obj, "spec", ""), "ports", "spec."):
        _strings(c, port, field, "name")
        _port(c, port, "port", field)


def _ingress(c: Collect, obj: Mapping[str, Any]) -> None:
    spec = _mapping(c, obj, "spec", "")
    for field, rule in _mappings(c, spec, "rules", "spec."):
        _strings(c, rule, field, "host")
        for path_field, path in _mappings(c, _mapping(c, rule, "http", field), "paths", field + "http."):
            _strings(c, path, path_field, "path", "pathType")
    for field, tls in _mappings(c, spec, "tls", "spec."):
        for host_field, host in _items(c, tls, "hosts", field):
            if not isinstance(host, str):
                c.add(host_field, host, "expected a string")


def _parent_ref(c: Collect, ref: Mapping[str, Any], at: str) -> None:
    _strings(c, ref, at, "group", "kind", "namespace", "name", "sectionName")
    _port(c, ref, "port", at)


def _httproute(c: Collect, obj: Mapping[str, Any]) -> None:
    spec = _mapping(c, obj, "spec", "")
    for field, host in _items(c, spec, "hostnames", "spec."):
        if not isinstance(host, str):
            c.add(field, host, "expected a string")
    for field, ref in _mappings(c, spec, "parentRefs", "spec."):
        _parent_ref(c, ref, field)
    for field, rule in _mappings(c, spec, "rules", "spec."):
        for match_field, match in _mappings(c, rule, "matches", field):
            _strings(c, _mapping(c, match, "path", match_field), match_field + "path.", "type", "value")
    for field, parent in _mappings(c, _mapping(c, obj, "status", ""), "parents", "status."):
        _parent_ref(c, _mapping(c, parent, "parentRef", field), field + "parentRef.")
        _conditions(c, parent, field)


def _grpcroute(c: Collect, obj: Mapping[str, Any]) -> None:
    _tcproute(c, obj)
    for field, host in _items(c, _mapping(c, obj, "spec", ""), "hostnames", "spec."):
        if not isinstance(host, str):
            c.add(field, host, "expected a string")


def _tcproute(c: Collect, obj: Mapping[str, Any]) -> None:
    for field, ref in _mappings(c, _mapping(c, obj, "spec", ""), "parentRefs", "spec."):
        _parent_ref(c, ref, field)
    for field, parent in _mappings(c, _mapping(c, obj, "status", ""), "parents", "status."):
        _parent_ref(c, _mapping(c, parent, "parentRef", field), field + "parentRef.")
        _conditions(c, parent, field)


def _gateway(c: Collect, obj: Mapping[str, Any]) -> None:
    spec = _mapping(c, obj, "spec", "")
    for field, listener in _mappings(c, spec, "listeners", "spec."):
        _strings(c, listener, field, "name", "protocol", "hostname")
        _port(c, listener, "port", field)
    for at, part in (("spec.", spec), ("status.", _mapping(c, obj, "status", ""))):
        for field, address in _mappings(c, part, "addresses", at):
            _strings(c, address, field, "type", "value")


_SHAPES: dict[str, Callable[[Collect, Mapping[str, Any]], None]] = {
    "route": _route, "service": _service, "ingress": _ingress, "httproute": _httproute, "grpcroute": _grpcroute,
    "tcproute": _tcproute, "gateway": _gateway}
"""kind (a source's, or ``gateway``) -> the check of the fields resolution reads."""


def check(kind: str, obj: Mapping[str, Any]) -> None:
    """Raise :class:`InvalidSource` naming every field of ``obj`` that resolution reads and that
    has the wrong shape."""
    c = Collect()
    _SHAPES[kind](c, obj)
    if c.errors:
        meta = obj.get("metadata")
        meta = meta if isinstance(meta, Mapping) else {}
        e = InvalidSource.of(c.errors, c.omitted)
        e.ref = (kind, str(meta.get("namespace") or "default"), str(meta.get("name")))
        raise e
