// The Runs tab (admins): run records with filters, and one run's timeline, diagnosis and
// verdict. A caller the server refuses sees its refusal, not an empty list.

import { getRun, listRuns } from "./api.js";
import { $, h, latestOnly, status, when } from "./dom.js";

let next = null;
let filters = {};
const listing = latestOnly();

function filtersOfForm() {
  const found = {};
  for (const name of ["user", "conversation", "status", "verdict"]) {
    const value = $(`runs-${name}`).value.trim();
    if (value) found[name] = value;
  }
  const since = $("runs-since").value;
  if (since) found.since = new Date(since).toISOString();
  return found;
}

function badge(kind, value) {
  return value ? h("span", { class: `badge ${kind}-${value}` }, value) : "";
}

function row(run) {
  return h(
    "tr",
    { class: "run-row", title: run.text_preview || "", dataset: { run: run.run_id }, onclick: () => showRun(run.run_id) },
    h("td", {}, when(run.created_at)),
    h("td", {}, run.user_id),
    h("td", { class: "mono" }, (run.conversation_id || "").slice(0, 12)),
    h("td", {}, badge("status", run.status)),
    h("td", {}, [run.route, run.intent].filter(Boolean).join(" · ")),
    h("td", {}, badge("level", run.diagnosis?.level)),
    h("td", {}, badge("verdict", run.verdict?.verdict)),
  );
}

/** List runs with the form's filters (`more`: the next page, appended). */
export async function refresh(more = false) {
  if (!more) filters = filtersOfForm();
  const body = $("runs-body");
  const current = listing();
  try {
    const page = await listRuns({ ...filters, before: more ? next : undefined });
    if (!current()) return;
    next = page.next || null;
    if (!more) body.replaceChildren();
    body.append(...page.runs.map(row));
    if (!body.children.length) {
      body.append(h("tr", {}, h("td", { colspan: 7, class: "empty" }, "No runs match.")));
    }
    status($("runs-note"), `${body.querySelectorAll(".run-row").length} runs`);
  } catch (error) {
    if (!current()) return;
    next = null;
    if (!more) body.replaceChildren();
    const refused = error.status === 403 ? "Refused by the server" : "Cannot list runs";
    status($("runs-note"), `${refused} — ${error.message}`, "error");
  }
  $("runs-more").hidden = !next;
}

function listOf(title, entries) {
  if (!entries?.length) return null;
  return [h("h3", {}, title), h("ul", { class: "hints" }, entries.map((e) => h("li", {}, typeof e === "string" ? e : JSON.stringify(e))))];
}

function timelineItem(entry) {
  const facts = entry.detail && Object.keys(entry.detail).length ? entry.detail : null;
  const detail = facts ? Object.entries(facts).map(([k, v]) => `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}`).join("\n") : "";
  const took = entry.duration_ms === undefined || entry.duration_ms === null ? "" : ` · ${entry.duration_ms} ms`;
  const attempt = entry.attempt > 1 ? ` · attempt ${entry.attempt}` : "";
  return h(
    "li",
    { class: `tl tl-${entry.kind}` },
    h("div", { class: "tl-head" }, h("span", { class: "mono" }, `#${entry.seq}`), ` ${entry.event && entry.event !== entry.kind ? entry.event : entry.step} · ${entry.kind}${attempt}${took}`, h("span", { class: "tl-at" }, when(entry.at))),
    detail ? h("pre", { class: "block" }, detail) : null,
  );
}

async function showRun(id) {
  const card = $("run-card");
  card.hidden = false;
  $("run-title").textContent = `Run ${id}`;
  const body = $("run-body");
  body.replaceChildren(h("p", { class: "empty" }, "loading…"));
  try {
    const run = await getRun(id);
    body.replaceChildren(
      h(
        "dl",
        { class: "prov" },
        [["user", run.user_id], ["conversation", run.conversation_id], ["status", run.status],
          ["route", run.route], ["intent", run.intent], ["created", when(run.created_at)], ["ended", when(run.ended_at)]]
          .filter(([, v]) => v)
          .map(([k, v]) => [h("dt", {}, k), h("dd", {}, v)]),
      ),
      h("div", { class: "verdicts" },
        h("div", {}, h("h3", {}, "Diagnosis "), badge("level", run.diagnosis?.level)),
        h("div", {}, h("h3", {}, "Verdict "), badge("verdict", run.verdict?.verdict))),
      listOf("Hints", run.diagnosis?.hints),
      listOf("Evidence", run.verdict?.evidence),
      run.error ? h("p", { class: "error" }, typeof run.error === "string" ? run.error : JSON.stringify(run.error)) : null,
      run.text ? [h("h3", {}, "Answer"), h("pre", { class: "block" }, run.text)] : null,
      h("h3", {}, "Timeline"),
      h("ol", { class: "timeline" }, (run.timeline || []).map(timelineItem)),
    );
  } catch (error) {
    body.replaceChildren(h("p", { class: "error" }, `Cannot read the run — ${error.message}`));
  }
  card.scrollIntoView({ behavior: "smooth", block: "start" });
}

/** Wire the tab. */
export function initRuns() {
  $("runs-form").addEventListener("submit", (event) => {
    event.preventDefault();
    refresh();
  });
  $("runs-more").addEventListener("click", () => refresh(true));
  $("run-close").addEventListener("click", () => {
    $("run-card").hidden = true;
  });
}
