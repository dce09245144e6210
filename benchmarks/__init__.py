"""Reproducible benchmarks of the probe engine against blackbox_exporter (see README.md)."""
