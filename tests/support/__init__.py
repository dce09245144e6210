"""Shared test support: real processes on loopback ports (no mocks where a real one runs)."""
