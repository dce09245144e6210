"""Replicas sharing the monitors: Leases, the live members each replica sees, and which member owns which monitor."""
