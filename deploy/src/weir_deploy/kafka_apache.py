"""Apache Kafka as a local engine: a single-node KRaft broker+controller from the Maven
Central jars, with SASL/SCRAM and ACLs when asked for."""

from __future__ import annotations

import base64
import os
import shutil
import time
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog
from pydantic import SecretStr

from weir_common.bus import KafkaCredentials

from .base import EngineStartError, ensure_port_free, free_port
from .kafka_acls import scram_format_args
from .kafka_jars import ensure_classpath
from .kafka_local import LocalKafka
from .process import run_tool

log = structlog.get_logger(__name__)

JAVA17 = Path("/usr/lib/jvm/java-17-openjdk-amd64/bin/java")
# C1 only (TieredStopAtLevel=1): the broker starts sooner and, measured under bench/load.py
# (200 clients x 5 turns, two interleaved rounds), costs less CPU per turn than with C2,
# whose compiling is not paid back within minutes: 12.5-12.8 vs 19.7-21.4 ms per turn,
# ready in 3.4-4.4 vs 5.4-5.8 s. WEIR_KAFKA_JVM_OPTS replaces all of these.
DEFAULT_JVM_OPTS = "-Xms128m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1"
LOG4J2 = """status = warn
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.apache.name = org.apache.kafka
logger.apache.level = WARN
"""


#: the operator's principal of a SASL broker: a super user, who applies the ACLs
ADMIN = "admin"
SCRAM = "SCRAM-SHA-512"


def find_java() -> str | None:
    """``$JAVA_HOME/bin/java``, Java 17, or ``java`` on PATH."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").exists():
        return str(Path(home) / "bin" / "java")
    if JAVA17.exists():
        return str(JAVA17)
    return shutil.which("java")


def new_cluster_id() -> str:
    """A random KRaft cluster id that the storage tool cannot read as an option.

    Like Kafka's own ``Uuid.randomUuid``: an id whose base64 form starts with ``-`` is drawn
    again (one in 64 would otherwise fail ``format -t <id>``).
    """
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id


class ApacheKafka(LocalKafka):
    """Single-node KRaft broker+controller from the Maven Central jars.

    Plain on loopback by default (`make run`). With `sasl_users` (name to password, with
    `admin` among them) clients must authenticate with SCRAM-SHA-512 on a SASL_PLAINTEXT
    listener, the users are created when the storage is formatted, and Kafka's
    StandardAuthorizer allows only what ACLs allow (`admin` is a super user). The controller
    listener stays PLAINTEXT on loopback: the broker reaches it as `User:ANONYMOUS`, which
    must be a super user for KRaft, and nothing outside this host can connect to it.
    """

    def __init__(
        self,
        data_dir: Path,
        port: int,
        controller_port: int | None = None,
        *,
        sasl_users: Mapping[str, str] | None = None,
    ) -> None:
        super().__init__(data_dir, port)
        self.controller_port = controller_port or free_port()
        self.partitions = int(os.environ.get("WEIR_KAFKA_PARTITIONS", "3"))
        self.work = data_dir / "kafka" / f"apache-{port}-{self.controller_port}"
        self.sasl_users = dict(sasl_users or {})
        if self.sasl_users:
            if ADMIN not in self.sasl_users:
                raise ValueError(f"sasl_users needs the super user {ADMIN!r}")
            self.admin = self.credentials(ADMIN)

    def credentials(self, user: str) -> KafkaCredentials:
        """The client credentials of one of `sasl_users`."""
        return KafkaCredentials("SASL_PLAINTEXT", SCRAM, user, SecretStr(self.sasl_users[user]))

    def _sasl_properties(self) -> dict[str, str]:
        """The listener, mechanism and authorizer settings of the SASL mode."""
        jaas = (
            "org.apache.kafka.common.security.scram.ScramLoginModule required "
            f'username="{ADMIN}" password="{self.sasl_users[ADMIN]}";'
        )
        return {
            "listeners": (
                f"SASL_PLAINTEXT://127.0.0.1:{self.port},"
                f"CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": f"SASL_PLAINTEXT://127.0.0.1:{self.port}",
            "inter.broker.listener.name": "SASL_PLAINTEXT",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": SCRAM,
            "sasl.mechanism.inter.broker.protocol": SCRAM,
            f"listener.name.sasl_plaintext.{SCRAM.lower()}.sasl.jaas.config": jaas,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": f"User:{ADMIN};User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
            "auto.create.topics.enable": "false",
        }

    def _properties(self) -> str:
        cport = self.controller_port
        props: dict[str, Any] = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{cport}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{cport}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.work / "logs"),
            "num.partitions": str(self.partitions),
            "auto.create.topics.enable": "true",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "3",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            # the group coordinator writes an offset commit at once, not after waiting 5 ms
            # for others to batch with (Kafka 4's default): a consumer that commits each
            # event before taking the next (the harness) waited 5.8 ms per event
            "group.coordinator.append.linger.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "log.flush.interval.ms": "60000",
            # a quiet single node: the controller notes it is alive every 5 s, not every
            # 0.5 s (a no-op metadata record each time), and the broker beats every 5 s
            "metadata.max.idle.interval.ms": "5000",
            "broker.heartbeat.interval.ms": "5000",
            "broker.session.timeout.ms": "18000",
        }
        if self.sasl_users:
            props |= self._sasl_properties()
        return "".join(f"{key}={value}\n" for key, value in props.items())

    async def start(self) -> None:
        """Resolve jars, format the log dir once, run ``kafka.Kafka``."""
        began = time.monotonic()
        java = find_java()
        if java is None:
            raise EngineStartError(self.name, "java not found (need Java 17)")
        ensure_port_free(self.name, self.port)
        ensure_port_free(self.name, self.controller_port)
        classpath = await ensure_classpath(self.data_dir / "logs")
        self.work.mkdir(parents=True, exist_ok=True)
        config, log4j = self.work / "server.properties", self.work / "log4j2.properties"
        config.write_text(self._properties())
        log4j.write_text(LOG4J2)
        jvm = [java, *os.environ.get("WEIR_KAFKA_JVM_OPTS", DEFAULT_JVM_OPTS).split(),
               "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}",
               "-cp", classpath]  # fmt: skip
        if not (self.work / "logs" / "meta.properties").exists():
            cluster_id = new_cluster_id()
            fmt = [*jvm, "kafka.tools.StorageTool", "format", "-t", cluster_id,
                   "-c", str(config), "--standalone", "--ignore-formatted",
                   *scram_format_args(self.sasl_users, SCRAM)]  # fmt: skip
            await run_tool(self.name, fmt, self.data_dir / "logs" / "kafka.log", max_wait=120)
        await self._run([*jvm, "kafka.Kafka", str(config)], began, grace=20.0)
