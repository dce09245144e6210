"""Subcommands of the route-monitor CLI, one module each, each exposing ``run(args) -> int``."""
