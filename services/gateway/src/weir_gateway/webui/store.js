// The conversations this browser started, and their transcripts, in localStorage.

import { newId } from "./dom.js";

const LIST_KEY = "weir.conversations";
const CURRENT_KEY = "weir.current";
const TURNS_PREFIX = "weir.turns.";
const MAX_CONVERSATIONS = 50;
const MAX_TURNS = 100;

function read(key, fallback) {
  try {
    const value = JSON.parse(localStorage.getItem(key));
    return value ?? fallback;
  } catch {
    return fallback;
  }
}

function write(key, value) {
  try {
    localStorage.setItem(key, JSON.stringify(value));
  } catch {
    // storage full or disabled: the page still works, it just forgets on reload
  }
}

/** [{id, title, created}], newest first. */
export function conversations() {
  const found = read(LIST_KEY, []);
  return Array.isArray(found) ? found : [];
}

/** Start a conversation; it becomes the current one. */
export function createConversation() {
  const conversation = { id: newId(), title: "New chat", created: new Date().toISOString() };
  const list = [conversation, ...conversations()];
  for (const dropped of list.splice(MAX_CONVERSATIONS)) localStorage.removeItem(TURNS_PREFIX + dropped.id);
  write(LIST_KEY, list);
  setCurrent(conversation.id);
  return conversation;
}

/** The current conversation id (a new conversation when there is none). */
export function current() {
  const id = localStorage.getItem(CURRENT_KEY);
  if (id && conversations().some((c) => c.id === id)) return id;
  return createConversation().id;
}

export function setCurrent(id) {
  localStorage.setItem(CURRENT_KEY, id);
}

/** Name a conversation after its first message. */
export function retitle(id, text) {
  const list = conversations();
  const found = list.find((c) => c.id === id);
  if (found && found.title === "New chat") {
    found.title = text.replace(/\s+/g, " ").trim().slice(0, 60) || "New chat";
    write(LIST_KEY, list);
  }
}

/** The turns of a conversation: [{role: "user"|"assistant", text, ...}]. */
export function turns(id) {
  const found = read(TURNS_PREFIX + id, []);
  return Array.isArray(found) ? found : [];
}

export function saveTurns(id, list) {
  write(TURNS_PREFIX + id, list.slice(-MAX_TURNS));
}

/** Forget every conversation of this browser ("forget me"). */
export function clearAll() {
  for (const conversation of conversations()) localStorage.removeItem(TURNS_PREFIX + conversation.id);
  localStorage.removeItem(LIST_KEY);
  localStorage.removeItem(CURRENT_KEY);
}
