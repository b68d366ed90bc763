"""weir_tools."""
