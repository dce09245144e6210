"""``route-monitor report``: a past range's SLO per monitor and per namespace, from exact probe counts."""
