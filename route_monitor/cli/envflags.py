"""Every flag also from an environment variable: ``--prometheus-url`` from ``ROUTE_MONITOR_PROMETHEUS_URL``.

The name is the flag's long name upper-cased, dashes to underscores, after ``ROUTE_MONITOR_``.
The command line wins over the variable, the variable over the default. A variable's value goes
through the flag's own type and choices, so it is checked as strictly as the flag; a bad one is
a usage error naming the variable. Switches take ``true``/``false`` (also ``1``/``0``,
``yes``/``no``, ``on``/``off``); repeatable flags take a comma-separated list; an empty variable
counts as unset (a Deployment's ``value: ""``).

How: before parsing, every optional flag's default becomes a marker (``None`` for repeatable
flags, whose values argparse appends to the default); after parsing, a flag still holding its
marker was not on the command line and takes the variable, else its real default.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

PREFIX: Final = "ROUTE_MONITOR_"
_TRUE: Final = ("1", "true", "yes", "on")
_FALSE: Final = ("0", "false", "no", "off")


class _Unset:
    def __repr__(self) -> str:
        return "<unset>"


UNSET: Final = _Unset()


def variable(action: argparse.Action) -> str | None:
    """``ROUTE_MONITOR_<FLAG>`` of an optional flag (its first long name); None for positionals,
    ``--help`` and ``--version``."""
    longs = [s for s in action.option_strings if s.startswith("--")]
    if not longs or isinstance(action, argparse._HelpAction | argparse._VersionAction):
        return None
    return PREFIX + longs[0][2:].upper().replace("-", "_")


def _convert(action: argparse.Action, text: str) -> Any:
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        lowered = text.strip().lower()
        if lowered not in _TRUE + _FALSE:
            raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected true or false")
        on = lowered in _TRUE
        return on if isinstance(action, argparse._StoreTrueAction) else not on
    if isinstance(action, argparse._AppendAction):
        return [_one(action, part.strip()) for part in text.split(",") if part.strip()]
    return _one(action, text)


def _one(action: argparse.Action, text: str) -> Any:
    convert: Callable[[str], Any] = action.type if callable(action.type) else str
    try:
        value = convert(text)
    except (argparse.ArgumentTypeError, TypeError, ValueError) as e:
        reason = str(e) if isinstance(e, argparse.ArgumentTypeError) else f"{text[:100]!r}: not a valid value"
        raise argparse.ArgumentTypeError(reason) from None
    if action.choices is not None and value not in action.choices:
        raise argparse.ArgumentTypeError(f"{text[:40]!r}: expected one of {', '.join(map(str, action.choices))}")
    return value


def parse(parser: argparse.ArgumentParser, subparsers: Mapping[str, argparse.ArgumentParser],
          argv: Sequence[str], env: Mapping[str, str]) -> argparse.Namespace:
    """``parser.parse_args(argv)`` with each subcommand's unset flags taken from ``env``."""
    defaults: dict[str, list[tuple[argparse.Action, Any]]] = {}
    for name, sub in subparsers.items():
        for action in sub._actions:
            var = variable(action)
            if var is None:
                continue
            defaults.setdefault(name, []).append((action, action.default))
            action.default = None if isinstance(action, argparse._AppendAction) else UNSET
            if action.required and env.get(var):
                action.required = False
    args = parser.parse_args(argv)
    sub = subparsers[args.command]
    for action, default in defaults.get(args.command, []):
        value = getattr(args, action.dest, UNSET)
        if value is not UNSET and value is not None:
            continue
        var = variable(action)
        text = env.get(var or "", "")
        if not text:
            setattr(args, action.dest, default)
            continue
        try:
            setattr(args, action.dest, _convert(action, text))
        except argparse.ArgumentTypeError as e:
            sub.error(f"{var}: {e}")
    return args
