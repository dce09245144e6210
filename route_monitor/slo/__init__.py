"""An SLO read back from Prometheus: the HTTP API client and the state it yields."""
