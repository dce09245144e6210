"""Monitors read from YAML files (``check``, ``rules``, ``standalone``, ``demo``): reading, planning
with resolved targets and folder credentials, and writing rule files.
"""
