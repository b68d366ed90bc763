// The Chat tab: the transcript, streamed answers over the WebSocket, the control bar
// (private, knowledge, tools), past conversations read back from the server, and resuming
// a run whose socket was lost (frames.py: `resume`).

import { api, getConversation } from "./api.js";
import * as sidebar from "./conversations.js";
import { $, h, newId } from "./dom.js";
import { ChatSocket } from "./socket.js";
import * as store from "./store.js";
import { renderTurn } from "./turn.js";

const PING_MS = 25000;
const LOST_BEFORE_ACCEPTED = {
  code: "not_sent",
  message: "the connection was lost before the message was accepted; send it again",
};

const cache = new Map(); // conversation id → its turns (as stored)
let socket;
let conversationId;

function turnsOf(id) {
  if (!cache.has(id)) cache.set(id, store.turns(id));
  return cache.get(id);
}

function save(id) {
  store.saveTurns(id, turnsOf(id));
}

/** Every assistant turn still waiting for its answer, with its conversation. */
function* unfinished() {
  for (const conversation of store.conversations()) {
    for (const turn of turnsOf(conversation.id)) {
      if (turn.role === "assistant" && (turn.status === "sending" || turn.status === "streaming")) {
        yield [conversation.id, turn];
      }
    }
  }
}

function find(predicate) {
  for (const [id, turn] of unfinished()) if (predicate(turn)) return [id, turn];
  return [null, null];
}

// --- rendering ------------------------------------------------------------------------

const scheduled = new Set();

/** Re-render one turn at the next frame (many deltas, one paint). */
function paint(id, turn) {
  if (id !== conversationId) return;
  scheduled.add(turn);
  if (scheduled.size === 1) requestAnimationFrame(flush);
}

function flush() {
  const transcript = $("transcript");
  const stick = transcript.scrollHeight - transcript.scrollTop - transcript.clientHeight < 80;
  for (const turn of scheduled) {
    const old = document.getElementById(`turn-${turn.key}`);
    const fresh = renderTurn(turn);
    if (old) old.replaceWith(fresh);
    else transcript.append(fresh);
  }
  scheduled.clear();
  if (stick) transcript.scrollTop = transcript.scrollHeight;
}

function showTranscript() {
  const transcript = $("transcript");
  transcript.replaceChildren();
  const turns = turnsOf(conversationId);
  if (turns.length === 0) {
    transcript.append(h("p", { class: "empty" }, "Start the conversation below."));
  }
  for (const turn of turns) transcript.append(renderTurn(turn));
  transcript.scrollTop = transcript.scrollHeight;
}

/** A stored message's step as the transcript draws it. */
function stepOf(step) {
  if (typeof step === "string") return { kind: "thought", content: step };
  const content = step.content ?? step.summary ?? (step.payload ? JSON.stringify(step.payload) : "");
  return { kind: step.kind || step.step || "step", tool: step.tool, content: String(content) };
}

function sourceName(source) {
  return typeof source === "string" ? source : source.source || source.title || JSON.stringify(source);
}

/** The server's messages of a conversation as transcript turns (tool results become step
 * cards of the answer they led to). */
function fromServer(messages) {
  const turns = [];
  let toolSteps = [];
  messages.forEach((message, i) => {
    const key = `s${i}-${message.run_id || ""}`;
    if (message.role === "user") {
      turns.push({ role: "user", key, text: message.text });
    } else if (message.role === "tool") {
      toolSteps.push({ kind: "observation", content: message.text });
    } else {
      const steps = [...toolSteps, ...(message.steps || []).map(stepOf)];
      toolSteps = [];
      turns.push({
        role: "assistant",
        key,
        runId: message.run_id,
        status: "done",
        text: message.text || "",
        after: -1,
        attempt: 1,
        steps,
        sources: (message.sources || []).map(sourceName),
      });
    }
  });
  return turns;
}

/** A past conversation (none of its turns in this browser): read it from the server. */
async function loadPast(id) {
  try {
    const found = await getConversation(id);
    if (turnsOf(id).length === 0) cache.set(id, fromServer(found.messages || []));
  } catch (error) {
    if (id === conversationId) notice(`Cannot open the conversation — ${error.message}`);
    return;
  }
  if (id === conversationId) showTranscript();
}

function showPrivate() {
  const on = store.isPrivate(conversationId) || sidebar.isPrivate(conversationId);
  $("private").checked = on;
  $("panel-chat").classList.toggle("private-mode", on);
}

function notice(text) {
  const transcript = $("transcript");
  transcript.append(h("p", { class: "notice error", role: "alert" }, text));
  transcript.scrollTop = transcript.scrollHeight;
}

function select(id) {
  conversationId = id;
  store.setCurrent(id);
  sidebar.setCurrent(id);
  showPrivate();
  showTranscript();
  if (turnsOf(id).length === 0 && !store.isLocal(id)) loadPast(id);
  document.body.classList.remove("show-convs");
}

function newChat() {
  select(store.createConversation().id);
}

// --- frames ---------------------------------------------------------------------------

function onFrame(frame) {
  const handler = HANDLERS[frame.type];
  if (handler) handler(frame);
}

function byRun(frame) {
  return find((turn) => turn.runId === frame.run_id);
}

function update(id, turn) {
  save(id);
  paint(id, turn);
}

const HANDLERS = {
  title(frame) {
    sidebar.onTitle(frame);
  },
  accepted(frame) {
    const [id, turn] = find((t) => t.status === "sending" && t.clientId === frame.id);
    if (!turn) return;
    Object.assign(turn, { runId: frame.run_id, status: "streaming" });
    update(id, turn);
  },
  resumed(frame) {
    const [id, turn] = byRun(frame);
    if (turn) update(id, turn);
  },
  step(frame) {
    const [id, turn] = byRun(frame);
    if (!turn) return;
    turn.steps.push({ kind: frame.kind, tool: frame.tool, content: frame.content });
    if (frame.kind === "retrieval" && frame.sources && frame.sources.length) {
      // one line per document: its name and the pages or sections cited
      const cited = new Map();
      for (const s of frame.sources) {
        const at = cited.get(s.source) || [];
        if (s.locator && !at.includes(s.locator)) at.push(s.locator);
        cited.set(s.source, at);
      }
      turn.sources = [...cited].map(([name, at]) => (at.length ? `${name} (${at.join(", ")})` : name));
    } else if (frame.kind === "retrieval" && frame.content && frame.content !== "nothing found") {
      turn.sources = frame.content.split(", ");
    }
    update(id, turn);
  },
  confirm(frame) {
    const [id, turn] = byRun(frame);
    if (!turn) return;
    turn.confirm = {
      callId: frame.call_id,
      tool: frame.tool,
      arguments: frame.arguments,
      expiresAt: frame.expires_at,
      reason: frame.reason,
      state: "waiting",
    };
    update(id, turn);
  },
  confirmed(frame) {
    const [id, turn] = byRun(frame);
    if (!turn?.confirm || turn.confirm.callId !== frame.call_id) return;
    turn.confirm.state = frame.approve ? "approved" : "denied";
    update(id, turn);
  },
  delta(frame) {
    const [id, turn] = byRun(frame);
    if (!turn || frame.index <= turn.after) return; // a piece already shown
    turn.text += frame.text;
    turn.after = frame.index;
    update(id, turn);
  },
  reset(frame) {
    const [id, turn] = byRun(frame);
    if (!turn) return;
    Object.assign(turn, { text: "", after: -1, attempt: frame.attempt });
    update(id, turn);
  },
  done(frame) {
    const [id, turn] = byRun(frame);
    if (!turn) return;
    if (turn.confirm && turn.confirm.state !== "approved" && turn.confirm.state !== "denied") {
      turn.confirm.state = "expired";
    }
    Object.assign(turn, {
      text: frame.text ?? turn.text,
      status: "done",
      route: frame.route,
      intent: frame.intent,
      offline: Boolean(frame.offline),
    });
    update(id, turn);
  },
  error(frame) {
    if (CONFIRM_ERRORS.has(frame.code)) {
      // an answer to a confirmation that was refused: the run itself goes on (or ended)
      notice(`${frame.code}: ${frame.message}`);
      const [id, turn] = byRun(frame);
      if (turn?.confirm?.state === "sending") {
        turn.confirm.state = "waiting";
        update(id, turn);
      }
      return;
    }
    // a run's failure names the run; a refused chat frame names nothing: the oldest sending
    const [id, turn] = frame.run_id ? byRun(frame) : find((t) => t.status === "sending");
    if (!turn) {
      notice(`${frame.code}: ${frame.message}`);
      return;
    }
    Object.assign(turn, { status: "error", error: { code: frame.code, message: frame.message } });
    update(id, turn);
  },
};

// errors of a `confirm` answer frame (the run is not failed by them)
const CONFIRM_ERRORS = new Set(["not_awaiting", "unknown_run"]);

/** Send the user's answer for the tool call a turn waits for. */
function answerConfirm(key, approve, remember) {
  const turn = turnsOf(conversationId).find((t) => t.key === key);
  if (!turn?.runId || turn.confirm?.state !== "waiting") return;
  const frame = {
    type: "confirm",
    run_id: turn.runId,
    call_id: turn.confirm.callId,
    approve,
    remember: remember ? "conversation" : "once",
  };
  if (!socket.send(frame)) {
    notice("Not connected; the answer was not sent.");
    return;
  }
  turn.confirm.state = "sending";
  update(conversationId, turn);
}

/** Ask again for a run that ended in a resumable error ("Check again"). */
function resumeTurn(key) {
  const turn = turnsOf(conversationId).find((t) => t.key === key);
  if (!turn?.runId) return;
  Object.assign(turn, { status: "streaming", error: null });
  update(conversationId, turn);
  const frame = { type: "resume", run_id: turn.runId, conversation_id: conversationId };
  socket.send({ ...frame, after: turn.after, attempt: turn.attempt }); // else on reconnect
}

/** After each (re)connect: runs with a run id continue where they stopped; messages never
 * accepted are marked (sending them again could answer twice). */
function onOpen() {
  for (const [id, turn] of [...unfinished()]) {
    if (turn.status === "sending") {
      Object.assign(turn, { status: "error", error: LOST_BEFORE_ACCEPTED });
      update(id, turn);
    } else if (turn.runId) {
      socket.send({
        type: "resume",
        run_id: turn.runId,
        conversation_id: id,
        after: turn.after,
        attempt: turn.attempt,
      });
    }
  }
  setSendable();
}

/** Was a socket refused for want of a token? (A 401 here also opens the sign-in box.) */
async function refused() {
  try {
    await api("/api/knowledge/permissions");
    return false;
  } catch (error) {
    return error.status === 401;
  }
}

// --- sending --------------------------------------------------------------------------

function setSendable() {
  $("send").disabled = !socket?.open;
}

function send(text) {
  const clientId = newId();
  const frame = {
    type: "chat",
    text,
    conversation_id: conversationId,
    id: clientId,
    private: $("private").checked,
    knowledge: $("use-knowledge").checked,
    tools: $("use-tools").checked,
  };
  if (!socket.send(frame)) {
    notice("Not connected; the message was not sent.");
    return false;
  }
  const turns = turnsOf(conversationId);
  if (turns.length === 0) $("transcript").replaceChildren();
  const user = { role: "user", key: `u-${clientId}`, text, private: frame.private };
  const answer = {
    role: "assistant",
    key: `a-${clientId}`,
    clientId,
    runId: null,
    status: "sending",
    text: "",
    after: -1,
    attempt: 1,
    steps: [],
    sources: [],
  };
  turns.push(user, answer);
  store.retitle(conversationId, text);
  save(conversationId);
  sidebar.touch(conversationId, text, frame.private);
  paint(conversationId, user);
  paint(conversationId, answer);
  return true;
}

function onSubmit(event) {
  event.preventDefault();
  const box = $("message");
  const text = box.value.trim();
  if (text && send(text)) box.value = "";
}

/** Wire the tab; the socket connects at once. */
export function initChat() {
  conversationId = store.current();
  socket = new ChatSocket({
    onFrame,
    onOpen,
    refused,
    onState: (text) => {
      $("conn").textContent = text;
      $("conn").dataset.state = text;
      setSendable();
    },
  });
  $("composer").addEventListener("submit", onSubmit);
  $("message").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      $("composer").requestSubmit();
    }
  });
  $("new-chat").addEventListener("click", newChat);
  $("private").addEventListener("change", () => {
    store.setPrivate(conversationId, $("private").checked);
    showPrivate();
  });
  for (const id of ["use-knowledge", "use-tools"]) {
    $(id).checked = store.control(id);
    $(id).addEventListener("change", () => store.setControl(id, $(id).checked));
  }
  sidebar.initConversations({
    open: select,
    deleted: (id) => {
      store.drop(id);
      cache.delete(id);
      if (id === conversationId) newChat();
    },
  });
  sidebar.loadConversations();
  $("toggle-convs").addEventListener("click", () => document.body.classList.toggle("show-convs"));
  $("transcript").addEventListener("click", (event) => {
    document.body.classList.remove("show-convs");
    const key = event.target.closest?.("[data-resume]")?.dataset.resume;
    if (key) resumeTurn(key);
    const button = event.target.closest?.("[data-confirm]");
    if (button) {
      const box = button.closest(".confirm")?.querySelector("[data-remember]");
      answerConfirm(button.dataset.key, button.dataset.confirm === "approve", box?.checked);
    }
  });
  setInterval(() => socket.send({ type: "ping" }), PING_MS);
  select(conversationId);
  socket.connect();
}

/** Open the socket again (after sign-in). */
export function reconnectChat() {
  socket.close();
  socket.connect();
}

/** Drop this browser's conversations ("forget me"). */
export function clearChats() {
  store.clearAll();
  cache.clear();
  select(store.current());
  sidebar.loadConversations();
}
