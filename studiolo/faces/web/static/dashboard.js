// Studiolo dashboard: live fragments, lease countdowns, and in-browser receipt verification.
// Plain JS, no build step. Live parts poll a server-rendered fragment that answers 204 when
// no event happened since the last one shown (the task page: and no lease moved).
"use strict";

const POLL_MS = 1000;
const FRAGMENT = { "X-Studiolo-Fragment": "1" };

const MISSED_BEFORE_NOTICE = 2;  // failed polls in a row before the page says it is offline
let missed = 0;

function connection(ok) {
  missed = ok ? 0 : missed + 1;
  const notice = document.getElementById("offline");
  if (notice) notice.hidden = missed < MISSED_BEFORE_NOTICE;
}

function signIn() {
  location.assign("/ui/sign-in?next=" + encodeURIComponent(location.pathname + location.search));
}

async function poll(el, onHtml) {
  const url = new URL(el.dataset.liveUrl, location.href);
  url.searchParams.set("after", el.dataset.after || "0");
  if (el.dataset.lease !== undefined) url.searchParams.set("lease", el.dataset.lease);
  try {
    const r = await fetch(url, { headers: FRAGMENT, credentials: "same-origin", cache: "no-store" });
    if (r.status === 401) { signIn(); return; }
    connection(r.status === 200 || r.status === 204);
    if (r.status === 200) onHtml(await r.text());
    else if (r.status !== 204) el.dataset.error = String(r.status);
  } catch (e) { connection(false); /* the server restarts or the network drops: try again next tick */ }
  setTimeout(() => poll(el, onHtml), POLL_MS);
}

// The task page and the task list: the live part is re-rendered whole by the server.
function followLive() {
  const live = document.getElementById("live");
  if (!live) return;
  poll(live, (html) => {
    const focused = document.activeElement && document.activeElement.id;
    live.innerHTML = html;
    live.dataset.renderedAt = String(Date.now());
    const seq = live.querySelector(".live-seq");
    if (seq) { live.dataset.after = seq.dataset.seq; if (live.dataset.lease !== undefined) live.dataset.lease = seq.dataset.lease || ""; }
    if (focused && live.contains(document.getElementById(focused))) document.getElementById(focused).focus();
    tick();
  });
}

// Activity: new events go on top, marked, and the page says how many arrived.
let arrived = 0;
function followEvents() {
  const body = document.getElementById("events");
  if (!body || !body.dataset.liveUrl) return;
  poll(body, (html) => {
    const box = document.createElement("tbody");
    box.innerHTML = html;
    const seq = box.querySelector("tr.live-seq");
    if (seq) { body.dataset.after = seq.dataset.seq; seq.remove(); }
    const rows = Array.from(box.querySelectorAll("tr[data-seq]"));
    if (!rows.length) return;
    const empty = body.querySelector("tr.empty");
    if (empty) empty.remove();
    for (const row of rows) row.classList.add("new");
    body.prepend(...rows);
    arrived += rows.length;
    const cue = document.getElementById("new-events");
    if (cue) { cue.hidden = false; cue.textContent = `${arrived} new event${arrived === 1 ? "" : "s"} since the page loaded (highlighted).`; }
  });
}

async function loadChain() {
  const el = document.getElementById("chain");
  if (!el) return;
  const r = await fetch(el.dataset.src, { headers: FRAGMENT, credentials: "same-origin" });
  if (r.status === 401) { signIn(); return; }
  el.innerHTML = r.ok ? await r.text() : `<p class="bad">Could not verify the chain (HTTP ${r.status}).</p>`;
}

// Lease countdowns: the server renders the authority's "now"; tick from there.
const loadedAt = Date.now();
function tick() {
  for (const el of document.querySelectorAll(".countdown[data-deadline]")) {
    const table = el.closest("[data-now]");
    const now = Number(el.dataset.now || (table && table.dataset.now));
    if (!now) continue;
    const live = el.closest("[data-rendered-at]");  // re-rendered since the page loaded
    const since = live ? Number(live.dataset.renderedAt) : loadedAt;
    const left = Number(el.dataset.deadline) - now - (Date.now() - since) / 1000;
    el.textContent = left > 0 ? fmt(left) : "expired";
    if (left <= 0 && !el.dataset.expired) { el.dataset.expired = "1"; leaseRanOut(el); }
  }
}
// A lease running out is no event: the task list asks for a fresh render (after=0).
function leaseRanOut(el) {
  const live = el.closest("#live");
  if (live && live.dataset.lease === undefined) live.dataset.after = "0";
}
function fmt(s) {
  s = Math.floor(s);
  const h = Math.floor(s / 3600), m = Math.floor((s % 3600) / 60), r = s % 60;
  return h ? `${h}h ${String(m).padStart(2, "0")}m` : `${m}m ${String(r).padStart(2, "0")}s`;
}

// RFC 8785 (JCS): ECMAScript number and string serialization, keys sorted by UTF-16 units.
function canonical(v) {
  if (v === null || typeof v !== "object") return JSON.stringify(v);
  if (Array.isArray(v)) return "[" + v.map(canonical).join(",") + "]";
  const keys = Object.keys(v).sort();
  return "{" + keys.map((k) => JSON.stringify(k) + ":" + canonical(v[k])).join(",") + "}";
}
function b64u(text) {
  const b = atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
  return Uint8Array.from(b, (c) => c.charCodeAt(0));
}

async function verifyReceipt(button) {
  const section = button.closest("section");
  const out = section.querySelector(".verify-result");
  const data = JSON.parse(section.querySelector(".receipt-data").dataset.json);
  try {
    const jwks = await (await fetch("/.well-known/jwks.json", { cache: "no-store" })).json();
    const jwk = jwks.keys.find((k) => k.kid === data.receipt.kid);
    if (!jwk) { out.textContent = "✗ no key with kid " + data.receipt.kid + " in the JWKS"; out.className = "verify-result bad"; return; }
    const key = await crypto.subtle.importKey("jwk", { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, { name: "Ed25519" }, false, ["verify"]);
    const bytes = new TextEncoder().encode(canonical(data.receipt));
    const ok = await crypto.subtle.verify({ name: "Ed25519" }, key, b64u(data.signature), bytes);
    out.textContent = ok ? "✓ signature valid (key " + jwk.kid + ")" : "✗ signature does NOT verify";
    out.className = "verify-result " + (ok ? "good" : "bad");
  } catch (e) {
    out.textContent = "This browser cannot verify Ed25519 signatures (" + e.name + "); nothing was checked.";
    out.className = "verify-result bad";
  }
}

document.addEventListener("click", (ev) => {
  const b = ev.target.closest("button.verify");
  if (b) verifyReceipt(b);
});
// Destructive forms ask first: `data-confirm` always, `data-confirm-reject` for a reject button.
document.addEventListener("submit", (ev) => {
  const form = ev.target;
  const button = ev.submitter;
  let question = form.dataset.confirm;
  if (form.dataset.confirmReject && button && button.value === "reject") question = form.dataset.confirmReject;
  if (question && !window.confirm(question)) ev.preventDefault();
});
document.addEventListener("DOMContentLoaded", () => {
  followLive();
  followEvents();
  loadChain();
  tick();
  setInterval(tick, 1000);
});
