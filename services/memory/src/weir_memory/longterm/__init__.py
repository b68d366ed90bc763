"""Long-term memory: profile and preferences, semantic and episodic memories, consolidation.

:mod:`.service` is the unit a turn talks to. Its vectors, all here: :mod:`.vector_index`
(users' records on the shared engine index of :mod:`weir_common.search`),
:mod:`.vector_rows` (the vectors kept in PostgreSQL), :mod:`.vector_upkeep` (labelling,
re-embedding and rebuilding the index at start), :mod:`.similarity` (calibrated cosine) and
:mod:`.tf_embedder` (the embedder of last resort).
"""
