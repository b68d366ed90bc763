// What this browser keeps in localStorage: the conversations it started and their turns
// (so a run in flight can be resumed after a reload), each chat's private mode, and the
// control bar's switches. The list of conversations itself comes from the server.

import { newId } from "./dom.js";

const LIST_KEY = "weir.conversations";
const PRIVATE_PREFIX = "weir.private.";
const CONTROL_PREFIX = "weir.control.";
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
  for (const conversation of conversations()) {
    localStorage.removeItem(TURNS_PREFIX + conversation.id);
    localStorage.removeItem(PRIVATE_PREFIX + conversation.id);
  }
  localStorage.removeItem(LIST_KEY);
  localStorage.removeItem(CURRENT_KEY);
}

/** Was this conversation started in this browser? */
export function isLocal(id) {
  return conversations().some((c) => c.id === id);
}

/** Forget one conversation's local copy (it was deleted). */
export function drop(id) {
  write(LIST_KEY, conversations().filter((c) => c.id !== id));
  localStorage.removeItem(TURNS_PREFIX + id);
  localStorage.removeItem(PRIVATE_PREFIX + id);
}

/** Private mode of one chat: its messages are remembered only within it. */
export function isPrivate(id) {
  return localStorage.getItem(PRIVATE_PREFIX + id) === "1";
}

export function setPrivate(id, on) {
  if (on) localStorage.setItem(PRIVATE_PREFIX + id, "1");
  else localStorage.removeItem(PRIVATE_PREFIX + id);
}

/** A control bar switch (knowledge, tools): on unless turned off. */
export function control(name) {
  return localStorage.getItem(CONTROL_PREFIX + name) !== "0";
}

export function setControl(name, on) {
  localStorage.setItem(CONTROL_PREFIX + name, on ? "1" : "0");
}
