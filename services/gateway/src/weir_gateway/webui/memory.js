// The Memory tab: the caller's profile and memories with their provenance, forgetting one,
// exporting everything, and "forget me".

import { api, download, saveBlob } from "./api.js";
import { $, h, latestOnly, status, when } from "./dom.js";

let userId = "";
let onForgotten = () => {};
const loading = latestOnly();

function userPath(kind) {
  return `/api/memory/${kind}/${encodeURIComponent(userId)}`;
}

function provenance(fields) {
  return h(
    "dl",
    { class: "prov" },
    fields
      .filter(([, value]) => value !== undefined && value !== null && value !== "" && !(Array.isArray(value) && !value.length))
      .map(([name, value]) => [h("dt", {}, name), h("dd", {}, Array.isArray(value) ? value.join(", ") : String(value))]),
  );
}

async function forgetOne(kind, id, label) {
  if (!confirm(`Forget “${label}”?`)) return;
  try {
    await api(`/api/memory/${kind}/${encodeURIComponent(id)}?user_id=${encodeURIComponent(userId)}`, {
      method: "DELETE",
    });
    await refresh(); // first: its own status line would hide the outcome
    status($("memory-status"), `Forgot ${label}.`, "ok");
  } catch (error) {
    status($("memory-status"), `Cannot forget it — ${error.message}`, "error");
  }
}

function profileItem(entry) {
  const values = (entry.values || []).join(", ");
  return h(
    "li",
    {},
    h(
      "div",
      { class: "item-head" },
      h("strong", {}, entry.key),
      h("span", {}, values),
      h("button", { class: "ghost small", onclick: () => forgetOne("profile", entry.key, entry.key) }, "Forget"),
    ),
    provenance([
      ["source", entry.source],
      ["from runs", entry.source_runs],
      ["updated", when(entry.updated_at)],
    ]),
  );
}

function memoryItem(item) {
  const label = item.title || item.content.slice(0, 40);
  return h(
    "li",
    {},
    h(
      "div",
      { class: "item-head" },
      h("span", { class: `badge ${item.type}` }, item.type),
      h("span", { class: "content" }, item.content),
      h("button", { class: "ghost small", onclick: () => forgetOne(item.type, item.id, label) }, "Forget"),
    ),
    item.detail ? h("p", { class: "detail" }, item.detail) : null,
    provenance([
      ["category", item.category],
      ["importance", item.importance_level ? `${item.importance_level} (${item.importance})` : item.importance],
      ["created", when(item.created_at)],
      ["last used", when(item.last_accessed)],
      ["from runs", item.source_runs],
      ["conversation", item.conversation_id],
    ]),
  );
}

function fill(list, items, render, empty) {
  list.replaceChildren(...items.map(render));
  if (!items.length) list.append(h("li", { class: "empty" }, empty));
}

/** Reload the profile and the memories. */
export async function refresh() {
  if (!userId) return;
  const type = $("memory-type").value;
  const current = loading();
  status($("memory-status"), "Loading…");
  try {
    const [profile, items] = await Promise.all([
      api(userPath("profile")),
      api(`${userPath("items")}${type ? `?type=${type}` : ""}`),
    ]);
    if (!current()) return;
    fill($("profile-list"), items.profile || [], profileItem, "No profile yet.");
    fill($("memory-list"), items.memories || [], memoryItem, "Nothing remembered yet.");
    $("preferences").textContent = profile.preferences || "(none)";
    status($("memory-status"), `Memories of ${userId}.`);
  } catch (error) {
    if (!current()) return;
    status($("memory-status"), `Cannot read memories — ${error.message}`, "error");
  }
}

async function exportAll() {
  try {
    const blob = await download(userPath("export"));
    saveBlob(blob, `weir-memory-${userId}.json`);
  } catch (error) {
    status($("memory-status"), `Export failed — ${error.message}`, "error");
  }
}

function askForgetMe() {
  const dialog = $("forget-dialog");
  $("forget-user").textContent = userId;
  dialog.returnValue = "";
  dialog.showModal();
}

async function forgetMe() {
  if ($("forget-dialog").returnValue !== "forget") return;
  try {
    const done = await api(userPath("users"), { method: "DELETE" });
    const counts = Object.entries(done.deleted || {}).map(([k, v]) => `${v} ${k}`);
    counts.push(`${done.runs_deleted ?? 0} runs`);
    onForgotten();
    await refresh(); // first: its own status line would hide the outcome
    status($("memory-status"), `Forgotten: ${counts.join(", ")}.`, "ok");
  } catch (error) {
    status($("memory-status"), `"Forget me" failed — ${error.message}`, "error");
  }
}

/** Wire the tab; `forgotten()` runs after "forget me" (clears this browser's chats). */
export function initMemory(forgotten) {
  onForgotten = forgotten;
  $("memory-refresh").addEventListener("click", refresh);
  $("memory-type").addEventListener("change", refresh);
  $("memory-export").addEventListener("click", exportAll);
  $("forget-me").addEventListener("click", askForgetMe);
  $("forget-dialog").addEventListener("close", forgetMe);
}

/** The user whose memories the tab shows (the caller). */
export function setUser(id) {
  userId = id;
}
