"""The harness's own persistence: runs, their step logs, the outbox, tool policies.

`RunStore` (`store`) is the interface; `RunRepository` (`postgres`, with the statements in
`pg_tx` and `pg_records`) stores in PostgreSQL, `MemoryRunStore` (`memory`) in memory.
"""

from weir_harness.repository.memory import MemoryRunStore
from weir_harness.repository.pg_tx import RunTx
from weir_harness.repository.postgres import OUTBOX_CHANNEL, RunRepository, init_connection
from weir_harness.repository.store import RedeliveredError, RunStore, RunTransaction, StaleRunError

__all__ = [
    "OUTBOX_CHANNEL",
    "MemoryRunStore",
    "RedeliveredError",
    "RunRepository",
    "RunStore",
    "RunTransaction",
    "RunTx",
    "StaleRunError",
    "init_connection",
]
