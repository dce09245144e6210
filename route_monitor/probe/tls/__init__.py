"""The probes' TLS contexts: the shared verifying context and its trust store, extra CAs, and per-
monitor contexts for a monitor's own CA or client certificate.
"""
