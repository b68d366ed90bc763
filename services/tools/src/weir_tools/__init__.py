"""weir tools service: MCP servers and built-in tools behind one catalogue, called over Kafka."""
