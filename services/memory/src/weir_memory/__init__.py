"""weir memory service: short-term memory of conversations (long-term memory comes later)."""
