"""The parser process: reads requests on stdin, answers on stdout, one at a time.

Run as ``python -m weir_rag.ingest.worker MEMORY_MB``. A request is a length-prefixed JSON
header followed by the file's bytes; the answer is a length-prefixed JSON document.
The process caps its own address space, and exits when stdin closes (its parent is gone).
"""

from __future__ import annotations

import json
import os
import resource
import sys
from typing import BinaryIO

from weir_rag.ingest.errors import IngestError
from weir_rag.ingest.loaders import parse_document
from weir_rag.ingest.wire import FRAME, encode_result


def read_frame(stream: BinaryIO) -> bytes | None:
    """One length-prefixed frame, or None at end of stream."""
    head = stream.read(FRAME.size)
    if len(head) < FRAME.size:
        return None
    (size,) = FRAME.unpack(head)
    body = stream.read(size)
    return body if len(body) == size else None


def handle(header: bytes, data: bytes) -> bytes:
    """Parse one file; every failure becomes an error answer, never a dead worker."""
    request = json.loads(header)
    try:
        doc = parse_document(data, request["format"], request["source"], request["structured"])
        return encode_result(doc)
    except IngestError as exc:
        return encode_result(None, exc.reason)
    except MemoryError:
        return encode_result(None, "parsing needed more memory than allowed")
    except RecursionError:
        return encode_result(None, "the file is nested too deeply to parse")
    except Exception as exc:  # a parser bug on odd input is still a bad document to the user
        return encode_result(None, f"the file could not be parsed: {type(exc).__name__}: {exc}")


def main() -> None:
    """Serve requests until stdin closes."""
    limit = int(sys.argv[1]) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    stdin = sys.stdin.buffer
    # Answers go to a private copy of fd 1; fd 1 itself (Python prints, C libraries) goes to
    # stderr, so nothing a library writes can corrupt the protocol.
    stdout = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    while (header := read_frame(stdin)) is not None:
        data = read_frame(stdin)
        if data is None:
            break
        answer = handle(header, data)
        stdout.write(FRAME.pack(len(answer)) + answer)
        stdout.flush()


if __name__ == "__main__":
    main()
