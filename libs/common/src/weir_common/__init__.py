"""weir_common."""
