"""Pure SLO rule generation: objective + monitor -> Prometheus recording and alerting rules.

Nothing in this package does I/O or knows Kubernetes, HTTP or a metrics client (kept by the
import-linter contract in ``.importlinter``).
"""
