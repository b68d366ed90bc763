"""`weir`: the one command of the product.

    weir run       start the engines and every service, print the URL (what `make run` does)
    weir up        start only the engines, until Ctrl-C
    weir chat      chat in the terminal with a running weir
    weir ingest    ingest a folder or a manifest of documents into a running weir
    weir dlq       dead letters: list, show, replay
    weir doctor    check the binaries the engines need
    weir settings  every setting, as the README's table

Each command hands its own options to the module behind it (`weir run --help`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PROG = "weir"
DEPLOY = "weir_deploy.__main__:main"
SETTINGS = "weir_deploy.cli:settings_main"


@dataclass(frozen=True)
class Call:
    """What a command line runs: an entry point (`module:function`) and its arguments."""

    target: str
    argv: list[str]
    prog: str = field(default=PROG, compare=False)  # the modules' usage lines name it


#: commands whose options belong to the module behind them: (help, entry point, fixed args)
PASSTHROUGH: dict[str, tuple[str, str, list[str]]] = {
    "run": ("start the engines and every service; prints the URL (Ctrl-C stops)",
            DEPLOY, ["run"]),
    "up": ("start only the engines (Kafka, PostgreSQL, Redis, Milvus Lite), until Ctrl-C",
           DEPLOY, ["up"]),
    "chat": ("chat in the terminal with a running weir (--url, --token)",
             "weir_gateway.client:main", []),
    "ingest": ("ingest a folder (or --manifest FILE) into a running weir and follow it",
               "weir_rag.batch:main", []),
    "doctor": ("check that the engines' binaries are installed",
               DEPLOY, ["doctor"]),
}  # fmt: skip


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="weir: an event-driven agent platform over Kafka.",
        epilog="`weir COMMAND --help` shows a command's options.",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs (run, up)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (text, _, _) in PASSTHROUGH.items():
        if name == "doctor":
            _add_dlq(sub)
        sub.add_parser(name, help=text, add_help=False)  # its module answers --help
    settings = sub.add_parser("settings", help="every setting as a Markdown table")
    where = settings.add_mutually_exclusive_group()
    where.add_argument("--write", type=Path, metavar="README", help="update the README's table")
    where.add_argument("--check", type=Path, metavar="README", help="fail when it is stale")
    return parser


def _add_dlq(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    dlq = sub.add_parser("dlq", help="dead-lettered events: list, show, replay after a fix")
    actions = dlq.add_subparsers(dest="action", required=True, metavar="ACTION")
    actions.add_parser("list", help="parked events per dead-letter topic")
    for action, text in (
        ("show", "the parked events of TOPIC (or TOPIC.dlq), oldest first"),
        ("replay", "re-publish the parked events of TOPIC to their topic, once"),
    ):
        one = actions.add_parser(action, help=text)
        one.add_argument("topic", metavar="TOPIC")
        one.add_argument("--limit", type=int, default=None, help="at most this many events")


def plan(argv: list[str]) -> Call:
    """The entry point and arguments a `weir` command line stands for (exits on bad ones)."""
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    verbose = ["-v"] if args.verbose else []
    if args.command in PASSTHROUGH:
        _, target, fixed = PASSTHROUGH[args.command]
        extra = verbose if target == DEPLOY and args.command != "doctor" else []
        return Call(target, [*extra, *fixed, *rest], f"{PROG} {args.command}")
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "dlq":
        limit = [] if getattr(args, "limit", None) is None else ["--limit", str(args.limit)]
        topic = [args.topic] if args.action != "list" else []
        action = "replay" if args.action == "replay" else "list"
        return Call(DEPLOY, [*verbose, "dlq", action, *topic, *limit])
    if args.write is not None:
        return Call(SETTINGS, ["--write", str(args.write)])
    if args.check is not None:
        return Call(SETTINGS, ["--check", str(args.check)])
    return Call(SETTINGS, [])


def settings_main(argv: list[str]) -> int:
    """Print the settings table, or write it into (`--write`) or check (`--check`) a README."""
    from .settings_table import REGENERATE, table, updated  # noqa: PLC0415 - every service

    if not argv:
        print(table(), end="")
        return 0
    option, path = argv[0], Path(argv[1])
    text = updated(path)
    if option == "--write":
        path.write_text(text)
        print(f"{path}: settings table written")
        return 0
    if text != path.read_text():
        print(f"{path}: the settings table is stale; run `{REGENERATE}`", file=sys.stderr)
        return 1
    return 0


def _entry(target: str) -> Callable[[list[str]], object]:
    module_name, _, function = target.partition(":")
    module = __import__(module_name, fromlist=[function])
    entry: Callable[[list[str]], object] = getattr(module, function)
    return entry


def run(call: Call) -> int:
    """Run a planned call in this process; its exit code."""
    program, sys.argv[0] = sys.argv[0], call.prog
    try:
        code = _entry(call.target)(call.argv)
    except SystemExit as exc:  # the modules' argument errors and exit statuses
        code = exc.code
    finally:
        sys.argv[0] = program
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def main(argv: list[str] | None = None) -> int:
    """The `weir` console script."""
    return run(plan(sys.argv[1:] if argv is None else argv))


if __name__ == "__main__":
    sys.exit(main())
