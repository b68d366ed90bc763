// weir's web UI: tabs, who is signed in, and the sign-in box. Each tab lives in its own
// module (chat.js, knowledge.js, memory.js, runs.js); no build step, no network but this
// gateway.

import { api, setToken, token } from "./api.js";
import { clearChats, initChat, reconnectChat } from "./chat.js";
import { $ } from "./dom.js";
import * as knowledge from "./knowledge.js";
import * as memory from "./memory.js";
import * as runs from "./runs.js";

const TABS = ["chat", "knowledge", "memory", "runs"];
const ON_SHOW = { knowledge: knowledge.refresh, memory: memory.refresh, runs: () => runs.refresh() };

let tab = "chat";
let needsSignIn = false;

function show(name) {
  tab = TABS.includes(name) ? name : "chat";
  for (const other of TABS) {
    $(`panel-${other}`).hidden = other !== tab;
    $(`tab-${other}`).setAttribute("aria-selected", String(other === tab));
  }
  if (location.hash !== `#${tab}`) history.replaceState(null, "", `#${tab}`);
  ON_SHOW[tab]?.();
}

/** Who am I: `/api/knowledge/permissions` names the caller, their role and rights. */
async function whoAmI() {
  try {
    const me = await api("/api/knowledge/permissions");
    needsSignIn = false;
    $("who").textContent = me.role === "admin" ? `${me.user_id} · admin` : me.user_id;
    knowledge.setPermissions(me);
    // the run inspector is for admins; anyone else opening #runs sees the server's answer
    $("tab-runs").hidden = me.role !== "admin";
    memory.setUser(me.user_id);
    return true;
  } catch {
    $("who").textContent = "";
    return false;
  } finally {
    showAuthButton();
  }
}

function showAuthButton() {
  const button = $("auth-button");
  button.hidden = !token() && !needsSignIn;
  button.textContent = token() ? "Sign out" : "Sign in";
}

function askToken(message = "") {
  needsSignIn = true;
  showAuthButton();
  const dialog = $("signin");
  $("signin-error").textContent = message;
  if (!dialog.open) {
    dialog.returnValue = "";
    dialog.showModal();
  }
}

async function onSignIn() {
  const dialog = $("signin");
  if (dialog.returnValue !== "ok") return;
  setToken($("token").value.trim());
  $("token").value = "";
  if (await whoAmI()) {
    reconnectChat();
    show(tab);
  }
}

function onAuthButton() {
  if (token()) {
    setToken("");
    location.reload();
  } else {
    askToken();
  }
}

async function boot() {
  window.addEventListener("weir:auth-required", () =>
    askToken(token() ? "The gateway refused this token." : ""),
  );
  $("signin").addEventListener("close", onSignIn);
  $("auth-button").addEventListener("click", onAuthButton);
  for (const name of TABS) $(`tab-${name}`).addEventListener("click", () => show(name));
  window.addEventListener("hashchange", () => show(location.hash.slice(1)));
  knowledge.initKnowledge();
  memory.initMemory(clearChats);
  runs.initRuns();
  await whoAmI();
  initChat();
  show(location.hash.slice(1));
}

boot();
