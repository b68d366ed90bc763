// Answers as markdown: parsed by marked, always sanitised by DOMPurify, then citations
// like [1] linked to the run's sources. The only place the page writes HTML.

import { marked } from "./vendor/marked.esm.js";

const purify = window.DOMPurify;

marked.setOptions({ gfm: true, breaks: true });

// Links in answers open in a new tab and carry no referrer or opener.
purify.addHook("afterSanitizeAttributes", (node) => {
  if (node.tagName === "A" && node.hasAttribute("href")) {
    node.setAttribute("target", "_blank");
    node.setAttribute("rel", "noopener noreferrer");
  }
});

const CITATION = /\[(\d{1,3})\]/g;
const HAS_CITATION = /\[\d{1,3}\]/;

/** Replace the text `[n]` by a link to source n (`#${anchor}-n`), or to the source list. */
function linkCitations(root, anchor, count) {
  const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  const texts = [];
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (!node.parentElement.closest("code, pre, a")) texts.push(node);
  }
  for (const node of texts) {
    const text = node.nodeValue;
    if (!HAS_CITATION.test(text)) continue;
    const parts = document.createDocumentFragment();
    let last = 0;
    for (const match of text.matchAll(CITATION)) {
      const n = Number(match[1]);
      parts.append(text.slice(last, match.index));
      const link = document.createElement("a");
      link.className = "cite";
      // passages are numbered, sources listed once each: past the list, link the list
      link.href = n >= 1 && n <= count ? `#${anchor}-${n}` : `#${anchor}`;
      link.textContent = match[0];
      parts.append(link);
      last = match.index + match[0].length;
    }
    parts.append(text.slice(last));
    node.replaceWith(parts);
  }
}

/** Render `text` as sanitised markdown into `el`; `[n]` links to source n of `anchor`. */
export function renderMarkdown(el, text, { anchor = "", sources = 0 } = {}) {
  const html = marked.parse(text, { async: false });
  el.innerHTML = purify.sanitize(html, { USE_PROFILES: { html: true } });
  if (anchor && sources > 0) linkCitations(el, anchor, sources);
}
