"""``route-monitor operator``: Routes, Services and RouteMonitors in; probes, PrometheusRules,
status and Warning events out. kopf runs the lifecycle (``handlers``), ``watches`` bring the
objects in; the supervisor and the
pure planning functions do the work."""
