"""The tile: how long each recorded piece of the long windows is (5 minutes unless shortened).

The long-window group (``alert_rules.rules``) records, once per evaluation, the exact counter
increases over the last *tile* and sums tiles into the 30m, 2h, 6h, 1d and 3d windows; the
group's ``interval`` is the tile, and the period group sums the tiles into hourly ones. In
production the tile is 5 minutes: a 3d window reads 864 recorded samples. Nothing about the
alerts' meaning depends on it; it only sets how soon after start-up the long windows hold a
first tile (one or two tiles), and how far behind the live data they may be (one tile).

A shorter tile (``--tile`` of ``route-monitor standalone`` and ``rules``) is for
test and demo stacks that probe every few seconds and want tickets within a minute or two:
each long-window rule then reads ten times more samples (a 30s tile: 8,640 for 3d), so it is
never the default and the operator has no such option. What stays consistent for any
accepted tile, and why the bounds below:

- the tile must divide 30 minutes (the shortest window summed from tiles), so every window
  (30m, 1h for the hourly tiles, 2h, 6h, 1d, 3d) is a whole number of tiles, and subquery
  steps aligned to the tile pick each tile exactly once;
- it can only be shortened (at most 5 minutes, the production choice): a longer one would make
  the 30m short window coarse and late;
- whole seconds, at least 10 probes per tile (:func:`probes_problem`): the bad-probe count of
  a tile (``changes()`` over the tile's range) misses a failure that straddles a tile edge,
  about one scrape interval in each tile; with ten probes per tile that is what the 5-minute
  tile loses at 30s probes;
- record names carry the tile (``...:probes:increase30s``), so series of different tiles never
  mix. Readers outside the generated rules do not read tiles: dashboards read the window
  ratios and the period records, whose names do not depend on the tile; ``route-monitor
  report`` reads the raw counters. The operator's ``status.slo`` (``alert_rules.readback``)
  sums 5-minute tiles, which is why only the default tile exists in a cluster.
"""

from __future__ import annotations

from alert_rules import durations

DEFAULT_TILE_MS = 300_000
"""5 minutes: what the operator always generates, and ``standalone``/``rules`` by default."""
SHORTEST_TILED_WINDOW_MS = 1_800_000
"""30m, the 6h/30m page's short window: every tiled window is a multiple of it."""
MIN_PROBES_PER_TILE = 10


class TileError(ValueError):
    """A tile length the generated rules cannot be consistent with: ``<subject>: <reason>``."""

    def __init__(self, subject: str, reason: str) -> None:
        super().__init__(f"{subject}: {reason}")
        self.reason = reason


def recent(record_sel: str, tile_ms: int) -> str:
    """A record as a rule of another group reads it: its last sample within two tiles (a group
    reading another group's record may run just before that group writes its sample, which then
    is one interval old, and at a 5-minute interval past the default lookback)."""
    return f"last_over_time({record_sel}[{durations.format_ms(2 * tile_ms)}])"


def tile_problem(tile_ms: int) -> str | None:
    """Why ``tile_ms`` cannot be a tile, or None."""
    if tile_ms <= 0 or tile_ms % 1000:
        return "a tile is a whole number of seconds, e.g. 30s or 1m"
    if tile_ms > DEFAULT_TILE_MS:
        return f"a tile is at most {durations.format_ms(DEFAULT_TILE_MS)} (the default; it can only be shortened)"
    if SHORTEST_TILED_WINDOW_MS % tile_ms:
        return "a tile must divide 30m evenly (e.g. 10s, 15s, 30s, 1m, 2m, 5m), so every window is whole tiles"
    return None


def check(tile_ms: int) -> None:
    problem = tile_problem(tile_ms)
    if problem is not None:
        raise TileError(f"tile {durations.format_ms(tile_ms) if tile_ms > 0 else tile_ms}", problem)


def parse(text: str) -> int:
    """A ``--tile`` value (``30s``) -> milliseconds; :class:`TileError` with the reason."""
    try:
        ms = durations.parse_ms(text)
    except durations.DurationError as e:
        raise TileError("--tile", str(e)) from None
    problem = tile_problem(ms)
    if problem is not None:
        raise TileError(f"--tile {text}", problem)
    return ms


def probes_problem(tile_ms: int, interval_ms: int) -> str | None:
    """Why a shortened tile holds too few of a monitor's probes, or None (the default tile's
    coarse intervals are ``alert_rules.findings``' own checks)."""
    if tile_ms == DEFAULT_TILE_MS or tile_ms >= MIN_PROBES_PER_TILE * interval_ms:
        return None
    most = durations.format_ms(max(1, tile_ms // MIN_PROBES_PER_TILE))
    return (f"probing every {durations.format_ms(interval_ms)}, a {durations.format_ms(tile_ms)} tile (--tile) "
            f"holds fewer than {MIN_PROBES_PER_TILE} probes, and the long windows' count of bad probes loses "
            f"about one per tile: probe every {most} or less, or use a longer --tile")
