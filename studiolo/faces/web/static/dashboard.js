// Studiolo dashboard: live fragments, lease countdowns, and in-browser receipt verification.
// Plain JS, no build step. Live parts poll a server-rendered fragment that answers 204 when
// no event happened since the last one shown (the task page: and no lease moved).
"use strict";

const POLL_MS = 1000;
const FRAGMENT = { "X-Studiolo-Fragment": "1" };

async function poll(el, onHtml) {
  const url = new URL(el.dataset.liveUrl, location.href);
  url.searchParams.set("after", el.dataset.after || "0");
  if (el.dataset.lease !== undefined) url.searchParams.set("lease", el.dataset.lease);
  try {
    const r = await fetch(url, { headers: FRAGMENT, credentials: "same-origin", cache: "no-store" });
    if (r.status === 401) { location.assign("/ui/sign-in"); return; }
    if (r.status === 200) onHtml(await r.text());
    else if (r.status !== 204) el.dataset.error = String(r.status);
  } catch (e) { /* the server restarts or the network drops: try again next tick */ }
  setTimeout(() => poll(el, onHtml), POLL_MS);
}

function followTask() {
  const live = document.getElementById("live");
  if (!live) return;
  poll(live, (html) => {
    live.innerHTML = html;
    const seq = live.querySelector(".live-seq");
    if (seq) { live.dataset.after = seq.dataset.seq; live.dataset.lease = seq.dataset.lease || ""; }
  });
}

function followEvents() {
  const body = document.getElementById("events");
  if (!body) return;
  poll(body, (html) => {
    body.insertAdjacentHTML("beforeend", html);
    const rows = body.querySelectorAll("tr[data-seq]");
    if (rows.length) body.dataset.after = rows[rows.length - 1].dataset.seq;
  });
}

async function loadChain() {
  const el = document.getElementById("chain");
  if (!el) return;
  const r = await fetch(el.dataset.src, { headers: FRAGMENT, credentials: "same-origin" });
  el.innerHTML = r.ok ? await r.text() : `<p class="bad">Could not verify the chain (HTTP ${r.status}).</p>`;
}

// Lease countdowns: the server renders the authority's "now"; tick from there.
const loadedAt = Date.now();
function tick() {
  for (const el of document.querySelectorAll(".countdown[data-deadline]")) {
    const table = el.closest("[data-now]");
    const now = Number(el.dataset.now || (table && table.dataset.now));
    if (!now) continue;
    const left = Number(el.dataset.deadline) - now - (Date.now() - loadedAt) / 1000;
    el.textContent = left > 0 ? fmt(left) : "expired";
  }
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
document.addEventListener("DOMContentLoaded", () => {
  followTask();
  followEvents();
  loadChain();
  tick();
  setInterval(tick, 1000);
});
