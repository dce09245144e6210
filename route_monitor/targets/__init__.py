"""Where a monitor's probes go: the kinds of objects a monitor can point at or be made from (Route,
Service, Ingress, HTTPRoute, URL), their resolution into one URL, the credentials a probe carries,
and the addresses never probed.
"""
