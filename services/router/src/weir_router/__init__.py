"""weir_router."""
