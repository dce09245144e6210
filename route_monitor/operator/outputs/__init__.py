"""What the operator generates besides status: each monitor's PrometheusRule and the per-namespace
scrape objects, kept in the cluster without touching what it does not own.
"""
