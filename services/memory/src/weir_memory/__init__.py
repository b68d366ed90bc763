"""weir memory service: short-term, long-term and session memory of every user."""
