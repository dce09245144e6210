"""What a user writes: a RouteMonitor's fields parsed into frozen dataclasses once, at the boundary,
and checked against the CRD's own schema (every error at once, with where it sits).
"""
