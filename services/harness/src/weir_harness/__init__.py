"""weir_harness."""
