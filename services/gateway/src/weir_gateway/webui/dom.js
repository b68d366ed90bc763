// Building DOM without HTML strings: every text goes in as a text node, so server and user
// strings can never become markup. (Only markdown.js writes HTML, after DOMPurify.)

/** `h("li", {class: "x", onclick}, "text", child)` → an element. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") {
      el.addEventListener(key.slice(2), value);
    } else if (key === "class") {
      el.className = value;
    } else if (key === "dataset") {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(key, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

/** Append children: nodes as they are, anything else as text. */
export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** The element with this id (throws when the page lacks it: a bug, not a runtime case). */
export function $(id) {
  const el = document.getElementById(id);
  if (!el) throw new Error(`#${id} is missing`);
  return el;
}

/** A short local date and time, or the input when it is not a date. */
export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? String(iso) : date.toLocaleString();
}

/** Set a status line; `kind` is "", "error" or "ok". */
export function status(el, text, kind = "") {
  el.textContent = text;
  el.className = `status ${kind}`.trim();
}

/** Random hex id, usable as a conversation id (works outside secure contexts too). */
export function newId() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

/** A ticket for each new request of one view; `ticket()` stays true only while no newer one
 * was taken, so an older answer arriving later (a slow tab refresh) does not overwrite it. */
export function latestOnly() {
  let newest = 0;
  return () => {
    const mine = ++newest;
    return () => mine === newest;
  };
}
