"""weir_rag."""
