// The Knowledge tab: upload with progress, the documents this user can see, their chunks,
// and deleting one (admins).

import { api, upload } from "./api.js";
import { $, h, latestOnly, status, when } from "./dom.js";

const PAGE = 10;
const POLL_MS = 2000;
const POLL_FOR_MS = 120000; // a document appears in the list once its ingestion ended

let offset = 0;
let total = 0;
let canManage = false;
let pollTimer = null;
let pollUntil = 0;
const listing = latestOnly();

function docPath(id) {
  return `/api/knowledge/documents/${encodeURIComponent(id)}`;
}

async function remove(doc) {
  if (!confirm(`Delete “${doc.source}” and its chunks?`)) return;
  try {
    const done = await api(docPath(doc.document_id), { method: "DELETE" });
    status($("docs-status"), `Deleted ${doc.source} (${done.deleted_chunks ?? 0} chunks).`, "ok");
    await refresh();
  } catch (error) {
    status($("docs-status"), `Delete failed — ${error.message}`, "error");
  }
}

function row(doc) {
  const scope = doc.owner ? "mine" : "shared";
  const state = doc.error ? `${doc.status}: ${doc.error}` : doc.status;
  return h(
    "tr",
    {},
    h("td", { class: "source" }, doc.source),
    h("td", {}, h("span", { class: `badge ${doc.status}` }, state)),
    h("td", { class: "num" }, doc.chunks ?? ""),
    h("td", {}, scope),
    h("td", {}, when(doc.updated_at)),
    h(
      "td",
      { class: "row-actions" },
      h("button", { class: "ghost small", onclick: () => showChunks(doc) }, "Chunks"),
      doc.owner || canManage
        ? h("button", { class: "danger small", onclick: () => remove(doc) }, "Delete")
        : null,
    ),
  );
}

/** Reload the current page of documents; poll while an upload is still being ingested. */
export async function refresh() {
  clearTimeout(pollTimer);
  const current = listing();
  try {
    const page = await api(`/api/knowledge/documents?offset=${offset}&limit=${PAGE}`);
    if (!current()) return;
    total = page.total ?? page.items.length;
    const body = $("docs-body");
    body.replaceChildren(...page.items.map(row));
    if (page.items.length === 0) {
      body.append(h("tr", {}, h("td", { colspan: 6, class: "empty" }, "No documents yet.")));
    }
    const last = Math.min(offset + PAGE, total);
    $("docs-page").textContent = total ? `${offset + 1}–${last} of ${total}` : "";
    $("docs-prev").disabled = offset === 0;
    $("docs-next").disabled = offset + PAGE >= total;
    if (Date.now() < pollUntil) pollTimer = setTimeout(refresh, POLL_MS);
  } catch (error) {
    if (!current()) return;
    status($("docs-status"), `Cannot list documents — ${error.message}`, "error");
  }
}

async function showChunks(doc) {
  const card = $("chunks-card");
  const list = $("chunks-list");
  $("chunks-title").textContent = `Chunks of ${doc.source}`;
  list.replaceChildren(h("li", { class: "empty" }, "loading…"));
  card.hidden = false;
  card.scrollIntoView({ behavior: "smooth", block: "start" });
  try {
    const found = await api(`${docPath(doc.document_id)}/chunks`);
    list.replaceChildren(
      ...found.items.map((chunk) =>
        h(
          "li",
          {},
          h("div", { class: "chunk-meta" }, `#${chunk.index}`, chunk.locator ? ` · ${chunk.locator}` : ""),
          h("pre", { class: "block" }, chunk.raw_content || chunk.semantic_text || ""),
        ),
      ),
    );
    if (found.items.length === 0) list.append(h("li", { class: "empty" }, "No chunks."));
  } catch (error) {
    list.replaceChildren(h("li", { class: "error" }, `Cannot read the chunks — ${error.message}`));
  }
}

function outcome(documents) {
  return documents
    .map((d) => `${d.source}: ${d.status}${d.chunks !== undefined ? ` (${d.chunks} chunks)` : ""}${d.reason ? ` — ${d.reason}` : ""}`)
    .join("; ");
}

async function onUpload(event) {
  event.preventDefault();
  const files = $("upload-files").files;
  if (!files.length) return;
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  if (canManage && $("upload-shared").checked) form.append("shared", "true");
  const bar = $("upload-progress");
  const line = $("upload-status");
  bar.hidden = false;
  bar.value = 0;
  $("upload-button").disabled = true;
  status(line, "Uploading…");
  try {
    const answer = await upload("/api/knowledge/upload?wait=true", form, (fraction) => {
      bar.value = Math.round(fraction * 100);
      if (fraction >= 1) status(line, "Uploaded; ingesting…");
    });
    const failed = answer.documents.some((d) => d.status === "failed");
    status(line, outcome(answer.documents), failed ? "error" : "ok");
    if (answer.documents.some((d) => d.status === "pending")) pollUntil = Date.now() + POLL_FOR_MS;
    $("upload-form").reset();
  } catch (error) {
    status(line, `Upload failed — ${error.message}`, "error");
  } finally {
    bar.hidden = true;
    $("upload-button").disabled = false;
    offset = 0;
    await refresh();
  }
}

/** Wire the tab; `me` is the caller's permissions. */
export function initKnowledge() {
  $("upload-form").addEventListener("submit", onUpload);
  $("docs-refresh").addEventListener("click", refresh);
  $("docs-prev").addEventListener("click", () => {
    offset = Math.max(0, offset - PAGE);
    refresh();
  });
  $("docs-next").addEventListener("click", () => {
    offset += PAGE;
    refresh();
  });
  $("chunks-close").addEventListener("click", () => {
    $("chunks-card").hidden = true;
  });
}

/** What the caller may do: admins manage the shared base (upload to it, delete). */
export function setPermissions(me) {
  canManage = Boolean(me?.can_manage_shared);
  $("shared-label").hidden = !canManage;
}
