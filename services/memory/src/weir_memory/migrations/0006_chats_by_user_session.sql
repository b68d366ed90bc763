-- A session's latest chats are read by user and conversation, newest first, a few at a time
-- (`SessionStore.latest_chats`, every turn). With only (conversation_id, id) and (user_id,
-- created_at) to choose from, the planner took the user's index and sorted all of the user's
-- chats (~50 buffers a read at 50 turns, growing with the user's history). One index on
-- (user_id, conversation_id, id) reads the last few along it; it also serves deleting a
-- conversation, the only other use of the one it replaces.
CREATE INDEX IF NOT EXISTS memory_chats_user_session ON memory_chats (user_id, conversation_id, id);
DROP INDEX IF EXISTS memory_chats_session;
