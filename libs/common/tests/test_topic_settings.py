"""Topics are created with the replication settings of the deployment (Apache Kafka)."""

from __future__ import annotations

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from weir_common.bus import ensure_topics
from weir_common.events import new_id

pytestmark = [pytest.mark.integration, pytest.mark.timeout(60)]


async def test_created_topics_carry_min_insync_replicas(stack_env: dict[str, str]) -> None:
    bootstrap = stack_env["KAFKA_BOOTSTRAP_SERVERS"]
    name = f"settings{new_id()[:8]}.events"
    await ensure_topics(bootstrap, [name], 2, replication_factor=1, min_insync_replicas=1)
    await ensure_topics(bootstrap, [name], 2)  # present already: left as it is
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
    await admin.start()
    try:
        [described] = await admin.describe_topics([name])
        [response] = await admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])
    finally:
        await admin.close()
    assert len(described["partitions"]) == 2
    entries = {entry[0]: entry for entry in response.resources[0][4]}
    assert entries["min.insync.replicas"][1] == "1"
    assert entries["min.insync.replicas"][3] == 1  # config source: the topic, not a default
