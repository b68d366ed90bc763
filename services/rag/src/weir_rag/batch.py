"""Batch re-ingestion (F16): `python -m weir_rag.batch FOLDER` or `--manifest FILE`.

Publishes `ingest.requested` for every document to a running deployment, shows a progress
bar from the outcome events, and records each outcome in `DATA_DIR/jobs/<job>.json`. The job
id comes from the document list, so running the same command again skips what is already
done (and the service skips unchanged content anyway): a second run finishes only what is
missing or changed.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar
from uuid import NAMESPACE_URL, uuid5

from opentelemetry.sdk.trace import TracerProvider
from tqdm import tqdm

from weir_common.bus import (
    KafkaCredentials,
    ensure_topics,
    make_broker,
    publish,
    subscriber_options,
    wait_until_assigned,
)
from weir_common.events import IngestCompleted, IngestFailed, IngestRequested, new_id
from weir_common.objects import LocalObjectStore
from weir_common.settings import WeirSettings

SUFFIXES = {".md", ".markdown", ".txt", ".rst", ".html", ".htm", ".csv", ".tsv", ".json",
            ".jsonl", ".yaml", ".yml", ".pdf", ".docx", ".pptx"}  # fmt: skip
DONE = ("ingested", "unchanged", "replaced")


class BatchSettings(WeirSettings):
    """The deployment to talk to: its broker, topics and data folder."""

    service_name: ClassVar[str] = "batch"


def document_id(collection: str, owner: str | None, source: str) -> str:
    """The same id the gateway gives an upload of the same name (so both replace each other)."""
    return uuid5(NAMESPACE_URL, f"weir:{collection}:{owner or '*'}:{source}").hex


def discover(folder: Path | None, manifest: Path | None) -> Iterator[tuple[str, Path]]:
    """(source name, path) of every document in a folder or listed in a manifest."""
    if folder is not None:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix.lower() in SUFFIXES:
                yield str(path.relative_to(folder)), path
    if manifest is not None:
        for line in manifest.read_text().splitlines():
            entry = line.strip()
            if entry and not entry.startswith("#"):
                path = (manifest.parent / entry).resolve()
                yield entry, path


class Job:
    """One batch: its documents, their recorded outcomes, and where those are kept."""

    def __init__(self, docs: list[tuple[str, Path]], collection: str, owner: str | None,
                 data_dir: Path) -> None:  # fmt: skip
        self.docs, self.collection, self.owner = docs, collection, owner
        key = json.dumps([collection, owner, [s for s, _ in docs]]).encode()
        self.job_id = hashlib.sha256(key).hexdigest()[:16]
        self.state_path = data_dir / "jobs" / f"{self.job_id}.json"
        self.state: dict[str, Any] = (
            json.loads(self.state_path.read_text()) if self.state_path.exists() else {}
        )

    def pending(self) -> list[tuple[str, str, bytes]]:
        """(document id, source, bytes) of documents not yet done with this content."""
        todo = []
        for source, path in self.docs:
            data = path.read_bytes()
            doc = document_id(self.collection, self.owner, source)
            seen = self.state.get(doc, {})
            digest = hashlib.sha256(data).hexdigest()
            if seen.get("sha256") == digest and seen.get("outcome") in DONE:
                continue
            todo.append((doc, source, data))
        return todo

    def record(self, outcome: IngestCompleted | IngestFailed, digest: str) -> None:
        """Remember one outcome (written at once, so an interrupted job resumes)."""
        entry: dict[str, Any] = {"source": outcome.source, "sha256": digest}
        if isinstance(outcome, IngestFailed):
            entry |= {"outcome": "failed", "reason": outcome.reason}
        else:
            entry |= {"outcome": outcome.outcome, "chunks": outcome.chunks}
        self.state[outcome.document_id] = entry
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        self.state_path.write_text(json.dumps(self.state, indent=1, ensure_ascii=False))


async def run(job: Job, settings: BatchSettings, timeout_s: float) -> int:
    """Publish what is pending, follow the outcomes; 0 when every document is done."""
    todo = job.pending()
    print(f"job {job.job_id}: {len(job.docs)} documents, {len(todo)} to ingest")
    if not todo:
        return 0
    topics = settings.topics
    reply = topics.reply(f"batch.{job.job_id}.{new_id()[:8]}")  # this run's outcomes only
    credentials = KafkaCredentials.of(settings)
    await ensure_topics(settings.kafka_bootstrap_servers, [reply], 1, credentials=credentials)
    outcomes: asyncio.Queue[IngestCompleted | IngestFailed] = asyncio.Queue()
    broker = make_broker(
        settings.kafka_bootstrap_servers, "batch", TracerProvider(), credentials=credentials
    )

    async def on_outcome(event: IngestCompleted | IngestFailed) -> None:
        await outcomes.put(event)

    options = subscriber_options(
        f"weir.batch.{new_id()}", fetch_max_wait_ms=settings.kafka_fetch_max_wait_ms
    )
    broker.subscriber(reply, **options)(on_outcome)
    store = LocalObjectStore.under(settings.data_dir)
    digests = {doc: hashlib.sha256(data).hexdigest() for doc, _, data in todo}
    async with broker:
        await broker.start()
        await wait_until_assigned(broker)
        for doc, source, data in todo:
            await publish(broker, topics, IngestRequested(
                document_id=doc, source=source, object_ref=await store.put(data),
                owner=job.owner, collection=job.collection, job_id=job.job_id, reply_to=reply,
            ))  # fmt: skip
        return await _follow(job, outcomes, digests, timeout_s)


async def _follow(
    job: Job,
    outcomes: asyncio.Queue[IngestCompleted | IngestFailed],
    digests: dict[str, str],
    timeout_s: float,
) -> int:
    waiting, failed = set(digests), 0
    with tqdm(total=len(waiting), unit="doc", desc="ingesting") as bar:
        try:
            async with asyncio.timeout(timeout_s):
                while waiting:
                    outcome = await outcomes.get()
                    if outcome.document_id not in waiting:
                        continue
                    waiting.discard(outcome.document_id)
                    job.record(outcome, digests[outcome.document_id])
                    failed += isinstance(outcome, IngestFailed)
                    bar.set_postfix_str(outcome.source[-40:])
                    bar.update()
        except TimeoutError:
            print(f"timed out with {len(waiting)} documents outstanding; run again to finish")
            return 1
    for doc, entry in job.state.items():
        if doc in digests and entry["outcome"] == "failed":
            print(f"failed: {entry['source']}: {entry['reason']}")
    print(f"done: {len(digests) - failed} ingested or unchanged, {failed} failed")
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> None:
    """Parse arguments, run the job, exit with its status."""
    parser = argparse.ArgumentParser(description="Ingest a folder or a manifest into weir.")
    parser.add_argument("folder", nargs="?", type=Path)
    parser.add_argument("--manifest", type=Path, help="a file listing document paths, one a line")
    parser.add_argument("--collection", default="default")
    parser.add_argument("--owner", help="make the documents private to this user (default: shared)")
    parser.add_argument("--timeout", type=float, default=3600.0, help="seconds to wait in all")
    args = parser.parse_args(argv)
    if args.folder is None and args.manifest is None:
        parser.error("give a folder or --manifest")
    settings = BatchSettings()
    docs = list(discover(args.folder, args.manifest))
    missing = [str(p) for _, p in docs if not p.is_file()]
    if missing:
        parser.error(f"not found: {', '.join(missing[:5])}")
    job = Job(docs, args.collection, args.owner, settings.data_dir)
    sys.exit(asyncio.run(run(job, settings, args.timeout)))


if __name__ == "__main__":
    main()
