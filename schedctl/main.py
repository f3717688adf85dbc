"""`schedctl` entry point: the argument parser, configuration and the error-to-exit-code mapping.

Exit codes: 0 done, 1 the server refused or could not be reached, 2 bad command line or input file.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata

from schedctl import config, job_write, jobs, queues, render, shards, why
from schedctl.client import ApiClient
from schedctl.errors import CliError

EPILOG = """\
configuration (flags override the environment, which overrides the file):
  --server / SCHEDCTL_SERVER / server:   API server (default http://127.0.0.1:8000)
  --token  / SCHEDCTL_TOKEN  / token:    API token, sent as "Authorization: Token <key>"
  config file: $SCHEDCTL_CONFIG, else ~/.config/schedctl/config.yaml

exit codes: 0 done, 1 the server refused or could not be reached, 2 bad usage or input file
"""


def version() -> str:
    """The installed project's version (`unknown` when run from a tree that was never installed)."""
    try:
        return metadata.version("schedweb")
    except metadata.PackageNotFoundError:
        return "unknown"


def common_options() -> argparse.ArgumentParser:
    """--server, --token and -o, accepted before or after the command (kubectl style).

    Defaults are SUPPRESS so a subcommand's copy never overwrites a value given before it.
    """
    common = argparse.ArgumentParser(add_help=False)
    group = common.add_argument_group("connection and output")
    group.add_argument("--server", default=argparse.SUPPRESS, metavar="URL",
                       help="API server URL (SCHEDCTL_SERVER; default http://127.0.0.1:8000)")
    group.add_argument("--token", default=argparse.SUPPRESS, metavar="KEY", help="API token (SCHEDCTL_TOKEN)")
    group.add_argument("-o", "--output", choices=render.OUTPUT_FORMATS, default=argparse.SUPPRESS,
                       help="output format: table (default), json or yaml")
    return common


def build_parser() -> argparse.ArgumentParser:
    """The whole command tree."""
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="schedctl", parents=[common], epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Command line for schedweb, a Volcano-style batch scheduler (vcctl style).")
    parser.add_argument("--version", action="version", version=f"schedctl {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    job_write.add_parsers(jobs.add_parsers(sub, common), common)
    queues.add_parsers(sub, common)
    shards.add_parsers(sub, common)
    why.add_parsers(sub, common)
    return parser


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """Parsed arguments with `server`, `token` and `output` always set (None / "table" by default).

    Usage errors exit 2 through argparse.
    """
    args = build_parser().parse_args(argv)
    for name, default in (("server", None), ("token", None), ("output", "table")):
        if not hasattr(args, name):
            setattr(args, name, default)
    return args


def main(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> int:
    """Run one command; returns the exit code (the console script passes it to sys.exit)."""
    args = parse_args(argv)
    try:
        conf = config.resolve(server=args.server, token=args.token,
                              environ=os.environ if environ is None else environ)
        args.func(ApiClient(conf.server, conf.token), args)
        sys.stdout.flush()
    except CliError as exc:
        sys.stdout.flush()
        for line in exc.lines():
            sys.stderr.write(line + "\n")
        return exc.exit_code
    except BrokenPipeError:  # `schedctl job list | head`: the reader left; not an error
        # Python would complain again while flushing stdout at exit: point it at devnull.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        sys.stderr.write("schedctl: interrupted\n")
        return 130
    return 0


if __name__ == "__main__":  # pragma: no cover - `python -m schedctl` goes through __main__.py
    raise SystemExit(main())
