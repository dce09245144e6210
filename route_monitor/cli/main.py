"""Command line (Contract 5). Each subcommand lives in ``route_monitor.cli.commands.<name>`` and
exposes ``add_arguments(parser)`` and ``run(args) -> int``. Only the command being run is
imported (``--help`` and each command stay fast: the commands' imports take up to a second);
:func:`build_parser` without ``only`` imports them all (tests, generated docs).

Every flag can also come from ``ROUTE_MONITOR_<FLAG>`` (:mod:`route_monitor.cli.envflags`); exit
codes and the error line are the same in every command (:mod:`route_monitor.cli.cliargs`).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Final

import prometheus_client

from route_monitor import __version__
from route_monitor.cli import envflags

COMMANDS: Final = {
    "operator": "run in a cluster: watch Routes, Services, Ingresses, HTTPRoutes and RouteMonitors",
    "standalone": "probe monitors from YAML files, no cluster",
    "rules": "print the generated recording and alerting rules",
    "check": "validate manifests and explain what each monitor's alerts mean",
    "doctor": "read the cluster: will the generated rules and ServiceMonitor be loaded?",
    "report": "SLO report over a calendar month or a date range, from Prometheus",
    "demo": "built-in local targets, real engine, live view; no cluster",
}
EPILOG: Final = ("Every flag can also be set as ROUTE_MONITOR_<FLAG> (e.g. ROUTE_MONITOR_LOG_LEVEL=debug); "
                 "the command line wins. Exit codes: 0 fine, 1 findings, 2 usage error or nothing to do.")


def command_module(name: str) -> ModuleType:
    return importlib.import_module(f"route_monitor.cli.commands.{name}")


def _chosen(argv: Sequence[str]) -> str | None:
    """The subcommand named on the command line (top-level options are only --help and --version)."""
    return next((a for a in argv if not a.startswith("-")), None)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or with ``only`` the flags of that command alone (the others
    are listed, with their help line, but not imported; ``""``: none)."""
    p = argparse.ArgumentParser(prog="route-monitor", description="Blackbox SLO monitoring for "
                                "Kubernetes/OpenShift Routes and Services.", epilog=EPILOG)
    p.add_argument("--version", action="version", version=f"route-monitor {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        command = sub.add_parser(name, help=help_text, description=help_text[:1].upper() + help_text[1:] + ".",
                                 epilog=EPILOG)
        if only is None or only == name:
            command_module(name).add_arguments(command)
    return p


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parser of each subcommand (to walk every flag)."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def parse(argv: Sequence[str], env: Mapping[str, str]) -> argparse.Namespace:
    chosen = _chosen(argv)
    parser = build_parser(chosen if chosen in COMMANDS else "")  # "": none imported (--help, a typo)
    return envflags.parse(parser, subparsers(parser), argv, env)


def main(argv: Sequence[str] | None = None, env: Mapping[str, str] | None = None) -> int:
    args = parse(sys.argv[1:] if argv is None else list(argv), os.environ if env is None else env)
    # process-wide, before any metric exists: no `_created` series (Prometheus does not use them,
    # and they add a series to every counter and histogram on /metrics)
    prometheus_client.disable_created_metrics()  # type: ignore[no-untyped-call]
    try:
        return int(command_module(args.command).run(args))
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
