"""The one error a bad document raises: a reason a person can read."""

from __future__ import annotations


class IngestError(Exception):
    """The document cannot be ingested; ``reason`` says why ("the PDF is encrypted").

    Raised for bad input only (empty, damaged, encrypted, unsupported, too slow to parse);
    infrastructure failures (an index or the registry being down) raise their own errors.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __reduce__(self) -> tuple[type[IngestError], tuple[str]]:
        # Crosses the parser's process boundary by pickle.
        return (IngestError, (self.reason,))
