"""weir_gateway."""
