"""Long-term memory: profile and preferences, semantic and episodic memories, consolidation."""
