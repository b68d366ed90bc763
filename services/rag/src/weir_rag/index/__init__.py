"""Index interfaces and engine adapters."""
