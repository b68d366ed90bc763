// HTTP calls to the gateway with the bearer token, if any. A 401 asks for sign-in.

const TOKEN_KEY = "weir.token";

/** The bearer token of this tab, or "" (the default local mode needs none). */
export function token() {
  return sessionStorage.getItem(TOKEN_KEY) || "";
}

/** Keep (or with "" drop) the token for this tab. */
export function setToken(value) {
  if (value) sessionStorage.setItem(TOKEN_KEY, value);
  else sessionStorage.removeItem(TOKEN_KEY);
}

/** Tell the page that the gateway wants a (valid) token. */
export function authRequired() {
  window.dispatchEvent(new CustomEvent("weir:auth-required"));
}

/** An HTTP error with the gateway's `detail`. */
export class ApiError extends Error {
  constructor(status, detail) {
    super(`${status}: ${detail}`);
    this.status = status;
    this.detail = detail;
  }
}

function headers(extra = {}) {
  const found = { ...extra };
  if (token()) found.Authorization = `Bearer ${token()}`;
  return found;
}

function detailOf(body, fallback) {
  if (body && typeof body.detail === "string") return body.detail;
  if (body && Array.isArray(body.detail)) return body.detail.map((d) => d.msg).join("; ");
  return fallback;
}

/** `fetch` a JSON API: the parsed body, or an ApiError. */
export async function api(path, { method = "GET", json } = {}) {
  const init = { method, headers: headers(json === undefined ? {} : { "Content-Type": "application/json" }) };
  if (json !== undefined) init.body = JSON.stringify(json);
  const response = await fetch(path, init);
  const body = await response.json().catch(() => null);
  if (response.status === 401) authRequired();
  if (!response.ok) throw new ApiError(response.status, detailOf(body, response.statusText));
  return body;
}

/** `fetch` a download: the response body as a Blob. */
export async function download(path) {
  const response = await fetch(path, { headers: headers() });
  if (response.status === 401) authRequired();
  if (!response.ok) {
    const body = await response.json().catch(() => null);
    throw new ApiError(response.status, detailOf(body, response.statusText));
  }
  return response.blob();
}

/** POST a FormData with upload progress (`onProgress(fraction)`); the parsed JSON answer. */
export function upload(path, form, onProgress) {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open("POST", path);
    for (const [name, value] of Object.entries(headers())) xhr.setRequestHeader(name, value);
    xhr.responseType = "json";
    xhr.upload.onprogress = (event) => {
      if (event.lengthComputable) onProgress(event.loaded / event.total);
    };
    xhr.upload.onload = () => onProgress(1);
    xhr.onload = () => {
      if (xhr.status === 401) authRequired();
      if (xhr.status >= 200 && xhr.status < 300) resolve(xhr.response);
      else reject(new ApiError(xhr.status, detailOf(xhr.response, xhr.statusText)));
    };
    xhr.onerror = () => reject(new ApiError(0, "network error"));
    xhr.send(form);
  });
}

/** Save a Blob as a file. */
export function saveBlob(blob, filename) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = filename;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

// --- the resources the page reads (one place to adjust when a server shape moves) -------

function query(params) {
  const found = new URLSearchParams();
  for (const [name, value] of Object.entries(params)) {
    if (value !== undefined && value !== null && value !== "") found.set(name, String(value));
  }
  const text = found.toString();
  return text ? `?${text}` : "";
}

function conversationPath(id) {
  return `/api/conversations/${encodeURIComponent(id)}`;
}

/** `{conversations: [{conversation_id, title, created_at, updated_at, private?}], next}`,
 * most recent first; `before` is the previous page's `next`. */
export function listConversations({ limit = 30, before } = {}) {
  return api(`/api/conversations${query({ limit, before })}`);
}

/** `{conversation: {...}, messages: [{role, text, run_id, created_at, sources?, steps?}]}`. */
export function getConversation(id) {
  return api(conversationPath(id));
}

export function renameConversation(id, title) {
  return api(conversationPath(id), { method: "PATCH", json: { title } });
}

export function deleteConversation(id) {
  return api(conversationPath(id), { method: "DELETE" });
}

/** `{runs: [{run_id, user_id, conversation_id, status, created_at, ended_at, route, intent,
 * diagnosis: {level, hints}, verdict: {verdict, evidence}}], next}`; filters as the API's. */
export function listRuns(filters = {}) {
  return api(`/api/runs${query({ limit: 50, ...filters })}`);
}

/** One run with its `text`, `error` and `timeline: [{seq, step, kind, attempt, at, ...}]`. */
export function getRun(id) {
  return api(`/api/runs/${encodeURIComponent(id)}`);
}
