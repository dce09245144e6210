"""Requests to the Kubernetes API that the operator makes itself: the connection, the writes (create,
pinned replace, status, events, Leases), what a failure was, whose object it is, start-up patience,
and the operator's own counters.
"""
