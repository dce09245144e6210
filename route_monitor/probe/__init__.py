"""The probe engine: asyncio workers that probe targets and export Contract 3's SLI metrics.

Knows nothing of kopf or Kubernetes (``.importlinter``): monitors come in as
:class:`~route_monitor.spec.monitor.MonitorSpec` plus a resolved URL, results go out as metrics and
:class:`~route_monitor.probe.result.ProbeResult` callbacks.
"""
