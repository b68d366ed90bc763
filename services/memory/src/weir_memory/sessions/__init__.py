"""Session memory (seed 001): per-conversation summaries, chats, recall scenarios and export."""
