// One turn of the transcript as DOM: a user's message, or an answer with its step cards,
// its markdown text, its sources and its error.

import { h } from "./dom.js";
import { renderMarkdown } from "./markdown.js";

// errors after which the run may still end well: the answer can be asked for again
const RESUMABLE = new Set(["deadline", "unavailable"]);

const STEP_LABELS = {
  retrieval: "Retrieved",
  thought: "Thought",
  action: "Tool call",
  observation: "Tool result",
};

/** Pretty JSON when `text` is JSON (or a Python-style dict), else the text as it is. */
function pretty(text) {
  for (const candidate of [text, pythonToJson(text)]) {
    try {
      const value = JSON.parse(candidate);
      if (value !== null && typeof value === "object") return JSON.stringify(value, null, 2);
    } catch {
      // not JSON: try the next reading
    }
  }
  return text;
}

/** `{'a': True, 'b': None}` → `{"a": true, "b": null}` (best effort, display only). */
function pythonToJson(text) {
  return text
    .replace(/'/g, '"')
    .replace(/\bTrue\b/g, "true")
    .replace(/\bFalse\b/g, "false")
    .replace(/\bNone\b/g, "null");
}

/** A tool call `tool({...})`: its name and its arguments, pretty. */
function callBody(step) {
  const match = /^([\w.-]+)\((.*)\)$/s.exec(step.content || "");
  return match ? pretty(match[2]) : step.content;
}

function stepCard(step) {
  const label = STEP_LABELS[step.kind] || step.kind;
  const tool = step.tool ? ` · ${step.tool}` : "";
  const body = step.kind === "action" ? callBody(step) : pretty(step.content || "");
  const summary = step.kind === "retrieval" ? `${label}: ${step.content}` : `${label}${tool}`;
  return h(
    "details",
    { class: `step step-${step.kind}` },
    h("summary", {}, summary),
    h("pre", {}, body),
  );
}

const CONFIRM_STATES = {
  approved: "Approved — running it.",
  denied: "Declined.",
  sending: "Sending your answer…",
  expired: "Not answered — not run.",
};

/** A tool call waiting for the user's approval: the tool, its arguments, approve / deny. */
function confirmCard(turn) {
  const ask = turn.confirm;
  if (!ask) return null;
  const why = ask.reason === "policy" ? "your settings ask for it" : "it may change things";
  const until = ask.expiresAt ? ` Expires ${new Date(ask.expiresAt).toLocaleTimeString()}.` : "";
  const waiting = ask.state === "waiting";
  return h(
    "div",
    { class: `confirm confirm-${ask.state}`, role: "group", "aria-label": "Confirm tool call" },
    h("p", {}, h("strong", {}, `Run ${ask.tool}?`), ` Needs your approval: ${why}.${until}`),
    h("pre", {}, JSON.stringify(ask.arguments ?? {}, null, 2)),
    waiting
      ? h(
          "div",
          { class: "confirm-actions" },
          h("button", { class: "primary small", dataset: { confirm: "approve", key: turn.key } }, "Approve"),
          h("button", { class: "danger small", dataset: { confirm: "deny", key: turn.key } }, "Deny"),
          h(
            "label",
            { class: "small" },
            h("input", { type: "checkbox", dataset: { remember: turn.key } }),
            " remember for this conversation",
          ),
        )
      : h("p", { class: "muted" }, CONFIRM_STATES[ask.state] || ask.state),
  );
}

function routeCard(turn) {
  const parts = [turn.route, turn.intent && `intent ${turn.intent}`, turn.offline && "offline"];
  return h(
    "details",
    { class: "step step-route" },
    h("summary", {}, `Route: ${parts.filter(Boolean).join(" · ")}`),
    h(
      "pre",
      {},
      JSON.stringify({ route: turn.route, intent: turn.intent, offline: turn.offline }, null, 2),
    ),
  );
}

function sourcesOf(turn, anchor) {
  if (!turn.sources?.length) return null;
  return h(
    "div",
    { class: "sources", id: anchor },
    h("span", { class: "label" }, "Sources"),
    h(
      "ol",
      {},
      turn.sources.map((source, i) => h("li", { id: `${anchor}-${i + 1}` }, source)),
    ),
  );
}

function answer(turn) {
  const anchor = `src-${turn.runId || turn.clientId}`;
  const body = h("div", { class: "md" });
  if (turn.text) {
    renderMarkdown(body, turn.text, { anchor, sources: turn.sources?.length || 0 });
  } else if (turn.status === "sending" || turn.status === "streaming") {
    body.append(h("span", { class: "typing", "aria-label": "waiting for the answer" }, "…"));
  }
  const steps = turn.steps?.length || turn.route ? h("div", { class: "steps" }) : null;
  if (steps) {
    if (turn.route) steps.append(routeCard(turn));
    steps.append(...turn.steps.map(stepCard));
  }
  const error = turn.error
    ? h(
        "p",
        { class: "error", role: "alert" },
        h("code", {}, turn.error.code),
        ` ${turn.error.message} `,
        turn.runId && RESUMABLE.has(turn.error.code)
          ? h("button", { class: "ghost small", dataset: { resume: turn.key } }, "Check again")
          : null,
      )
    : null;
  return [steps, confirmCard(turn), body, sourcesOf(turn, anchor), error];
}

/** The DOM of one turn (its id is stable, so a later render replaces it). */
export function renderTurn(turn) {
  if (turn.role === "user") {
    return h(
      "article",
      { class: "turn user", id: `turn-${turn.key}` },
      h("div", { class: "bubble" }, turn.text),
      turn.private ? h("span", { class: "tag" }, "private") : null,
    );
  }
  return h(
    "article",
    { class: `turn assistant ${turn.status}`, id: `turn-${turn.key}`, "aria-busy": turn.status === "streaming" },
    answer(turn),
  );
}
