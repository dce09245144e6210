"""``route-monitor operator``: Routes, Services and RouteMonitors in; probes, PrometheusRules,
status and Warning events out. kopf is the thin edge (``handlers``); the supervisor and the
pure planning functions do the work."""
