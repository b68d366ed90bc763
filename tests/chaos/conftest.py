"""One product for the whole chaos tier: started once, disrupted by each test in turn."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .product import Product, product


@pytest.fixture(scope="module")
async def running() -> AsyncIterator[Product]:
    """The product on its own engines (Apache Kafka), supervised, with the document uploaded."""
    async with product() as started:
        await started.upload_doc()
        yield started
