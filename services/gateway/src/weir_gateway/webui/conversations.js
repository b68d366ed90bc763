// The sidebar: the caller's conversations as the server keeps them (most recent first,
// a page at a time), renamed and deleted there; titles arrive live as `title` frames.

import { deleteConversation, listConversations, renameConversation } from "./api.js";
import { $, h } from "./dom.js";

const PAGE = 30;

let items = []; // [{conversation_id, title, created_at, updated_at, private?}]
let next = null;
let currentId = null;
let onOpen = () => {};
let onDeleted = () => {};

function titleOf(item) {
  return item.title || "New chat";
}

async function rename(item) {
  const title = prompt("Rename the conversation", titleOf(item))?.trim();
  if (!title || title === item.title) return;
  try {
    await renameConversation(item.conversation_id, title);
    item.title = title;
    render();
  } catch (error) {
    problem(`Rename failed — ${error.message}`);
  }
}

async function remove(item) {
  if (!confirm(`Delete “${titleOf(item)}” and its messages?`)) return;
  try {
    await deleteConversation(item.conversation_id);
    items = items.filter((other) => other !== item);
    render();
    onDeleted(item.conversation_id);
  } catch (error) {
    problem(`Delete failed — ${error.message}`);
  }
}

function problem(text) {
  $("conv-status").textContent = text;
}

function entry(item) {
  const current = item.conversation_id === currentId;
  return h(
    "li",
    { class: current ? "conv-item current" : "conv-item", dataset: { id: item.conversation_id } },
    h(
      "button",
      {
        class: "conv",
        title: item.updated_at ? new Date(item.updated_at).toLocaleString() : "",
        "aria-current": current ? "true" : false,
        onclick: () => onOpen(item.conversation_id),
      },
      item.private ? h("span", { class: "lock", title: "private" }, "🔒 ") : null,
      titleOf(item),
    ),
    h("button", { class: "icon", title: "Rename", "aria-label": "Rename", onclick: () => rename(item) }, "✎"),
    h("button", { class: "icon", title: "Delete", "aria-label": "Delete", onclick: () => remove(item) }, "×"),
  );
}

function render() {
  $("conv-list").replaceChildren(...items.map(entry));
  $("conv-more").hidden = !next;
}

/** Load the first page again (`more`: the next page, appended). */
export async function loadConversations(more = false) {
  try {
    const page = await listConversations({ limit: PAGE, before: more ? next : undefined });
    const known = new Set(more ? items.map((item) => item.conversation_id) : []);
    const fresh = page.conversations.filter((item) => !known.has(item.conversation_id));
    // a conversation started here whose first turn the server has not stored yet stays
    const pending = more ? [] : items.filter((item) => item.pending);
    items = more ? [...items, ...fresh] : [...pending.filter((p) => !fresh.some((f) => f.conversation_id === p.conversation_id)), ...fresh];
    next = page.next || null;
    problem("");
  } catch (error) {
    problem(`Cannot list conversations — ${error.message}`);
  }
  render();
}

/** A conversation that just got its first message here: on top until the server has it. */
export function touch(id, text, isPrivate) {
  const found = items.find((item) => item.conversation_id === id);
  if (found) {
    items = [found, ...items.filter((item) => item !== found)];
  } else {
    const title = text.replace(/\s+/g, " ").trim().slice(0, 60);
    items.unshift({ conversation_id: id, title, private: isPrivate, pending: true, updated_at: new Date().toISOString() });
  }
  render();
}

/** A `title` frame: the server named a conversation. */
export function onTitle(frame) {
  const found = items.find((item) => item.conversation_id === frame.conversation_id);
  if (found) Object.assign(found, { title: frame.title, pending: false });
  else items.unshift({ conversation_id: frame.conversation_id, title: frame.title });
  render();
}

/** Mark the open conversation. */
export function setCurrent(id) {
  currentId = id;
  render();
}

/** Is this conversation marked private on the server? */
export function isPrivate(id) {
  return Boolean(items.find((item) => item.conversation_id === id)?.private);
}

/** Wire the sidebar: `open(id)` shows a conversation, `deleted(id)` after a delete. */
export function initConversations({ open, deleted }) {
  onOpen = open;
  onDeleted = deleted;
  $("conv-more").addEventListener("click", () => loadConversations(true));
}
