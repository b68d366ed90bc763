"""Conversations (F07): the list a user sees, their titles and turns."""
