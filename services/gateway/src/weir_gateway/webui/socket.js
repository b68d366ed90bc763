// The chat WebSocket: one place opens it (openSocket), and a connection that reconnects
// with backoff. Frames are documented in the gateway's frames.py.

import { api, authRequired } from "./api.js";

const POLICY_VIOLATION = 1008; // the gateway refused the credentials

/** Open the chat socket on this page's origin with a one-use ticket from
 * `POST /api/ws-ticket` (bought with this tab's credentials): a token never goes in a URL.
 * Rejects when no ticket could be had (a 401 there asks for sign-in). */
export async function openSocket() {
  const { ticket } = await api("/api/ws-ticket", { method: "POST" });
  const scheme = location.protocol === "https:" ? "wss:" : "ws:";
  const url = new URL(`${scheme}//${location.host}/ws/chat`);
  url.searchParams.set("ticket", ticket);
  return new WebSocket(url);
}

/** A chat connection that comes back after a loss: `onFrame(frame)` for every server frame,
 * `onOpen()` after each (re)connect (the place to send `resume`), `onState(text)`, and
 * `refused()` → Promise<boolean>, asked when a socket closes before it opened: true when
 * the gateway wants a token (a refusal before the handshake reaches browsers as 1006). */
export class ChatSocket {
  constructor({ onFrame, onOpen, onState, refused }) {
    Object.assign(this, { onFrame, onOpen, onState, refused });
    this.ws = null;
    this.connecting = false;
    this.failures = 0;
    this.timer = null;
    this.stopped = false;
  }

  get open() {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  async connect() {
    clearTimeout(this.timer);
    this.stopped = false;
    if (this.connecting || (this.ws && this.ws.readyState <= WebSocket.OPEN)) return;
    this.onState("connecting…");
    let ws;
    this.connecting = true;
    try {
      ws = await openSocket();
    } catch (error) {
      if (error?.status === 401) this.signInNeeded();
      else if (!this.stopped) this.retry();
      return;
    } finally {
      this.connecting = false;
    }
    let opened = false;
    this.ws = ws;
    ws.onopen = () => {
      opened = true;
      this.failures = 0;
      this.onState("connected");
      this.onOpen();
    };
    ws.onmessage = (event) => {
      let frame;
      try {
        frame = JSON.parse(event.data);
      } catch {
        return;
      }
      this.onFrame(frame);
    };
    ws.onclose = async (event) => {
      if (this.ws !== ws) return;
      this.ws = null;
      const policy = event.code === POLICY_VIOLATION;
      if (policy) authRequired(); // refused() asks for sign-in itself
      const needsToken = policy || (!opened && (await this.refused()));
      if (this.ws) return; // connect() ran meanwhile (a sign-in)
      if (needsToken) this.signInNeeded();
      else if (!this.stopped) this.retry();
    };
  }

  signInNeeded() {
    this.stopped = true;
    this.onState("sign-in needed");
  }

  /** Reconnect after a growing, jittered pause (0.5 s doubling to 15 s). */
  retry() {
    const delay = Math.min(15000, 500 * 2 ** this.failures) * (0.75 + Math.random() / 2);
    this.failures += 1;
    this.onState(`disconnected — retrying in ${Math.ceil(delay / 1000)} s`);
    this.timer = setTimeout(() => this.connect(), delay);
  }

  /** Close for good (until connect() is called again). */
  close() {
    this.stopped = true;
    clearTimeout(this.timer);
    this.ws?.close();
    this.ws = null;
  }

  /** Send one frame; false when the socket is not open. */
  send(frame) {
    if (!this.open) return false;
    this.ws.send(JSON.stringify(frame));
    return true;
  }
}
