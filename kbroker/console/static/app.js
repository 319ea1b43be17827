// kbroker console: a tiny single-page app over /api/console/ (no framework, no build step).
// The path names the page: /topics, /topics/<name>, /groups, /groups/<id>, /cluster.
"use strict";

const $ = (sel, root = document) => root.querySelector(sel);
const main = $("#main");
let timers = [];          // polling of the current page, cleared on navigation

function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "html") el.innerHTML = v;
    else el.setAttribute(k, v === true ? "" : v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

class ApiError extends Error {}
const MAX_BODY = 1024 * 1024;   // the HTTP listener's request body limit

async function api(path, body) {
  const opts = body === undefined ? {} : {
    method: "POST", headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
  };
  if (opts.body && new Blob([opts.body]).size > MAX_BODY) {
    throw new ApiError(`too large: ${fmtBytes(new Blob([opts.body]).size)}; the console accepts requests up to 1 MiB`);
  }
  let resp;
  try {
    resp = await fetch(path, opts);
  } catch (e) {
    throw new ApiError("the broker does not answer (is it running?)");
  }
  const text = await resp.text();
  let data = null;
  try { data = JSON.parse(text); } catch (e) { /* plain text answer */ }
  if (!resp.ok) {
    if (resp.status === 401 && data && data.error === "LOGIN_REQUIRED") { pageLogin(); throw new ApiError(data.message); }
    if (resp.status === 413) throw new ApiError("too large: the console accepts requests up to 1 MiB");
    const msg = data && data.message ? `${data.message}` : text.trim() || resp.statusText;
    throw new ApiError(data && data.error && data.error !== msg ? `${msg} (${data.error})` : msg);
  }
  return data;
}

function showError(msg) {
  const el = $("#error");
  if (!msg) { el.hidden = true; el.textContent = ""; return; }
  el.textContent = msg; el.hidden = false;
}

function setMsg(el, text, ok) {
  el.textContent = text || "";
  el.className = "msg " + (text ? (ok ? "ok" : "error") : "");
}

const fmtBytes = (n) => {
  if (n === null || n === undefined) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : Math.round(n)) + " " + u[i];
};
const fmtNum = (n) => (n === null || n === undefined) ? "–" : Number(n).toLocaleString("en-US");
const fmtRate = (n) => (n === null || n === undefined) ? "–" : (n < 10 ? n.toFixed(1) : Math.round(n).toLocaleString("en-US"));
const fmtTime = (ms) => ms < 0 ? "–" : new Date(ms).toISOString().replace("T", " ").replace("Z", "");

function every(ms, fn) { timers.push(setInterval(fn, ms)); }

// ---------------------------------------------------------------- decoding records
const utf8 = new TextDecoder("utf-8", { fatal: true });
function b64bytes(b64) {
  const s = atob(b64); const out = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) out[i] = s.charCodeAt(i);
  return out;
}
function hex(bytes) {
  const parts = [];
  for (let i = 0; i < bytes.length; i += 16) {
    const row = Array.from(bytes.slice(i, i + 16));
    parts.push(i.toString(16).padStart(6, "0") + "  " +
      row.map((b) => b.toString(16).padStart(2, "0")).join(" ").padEnd(48) + "  " +
      row.map((b) => (b >= 32 && b < 127 ? String.fromCharCode(b) : ".")).join(""));
  }
  return parts.join("\n");
}
function render(b64, format) {
  if (b64 === null || b64 === undefined) return { text: "null", kind: "null" };
  const bytes = b64bytes(b64);
  if (format === "hex") return { text: hex(bytes), kind: "hex" };
  let text;
  try { text = utf8.decode(bytes); } catch (e) { return { text: hex(bytes), kind: "hex" }; }
  if (format === "json") {
    try { return { text: JSON.stringify(JSON.parse(text), null, 2), kind: "json" }; } catch (e) { /* not JSON */ }
  }
  return { text, kind: "text" };
}

// ---------------------------------------------------------------- pages
async function pageTopics() {
  main.replaceChildren(
    h("h1", {}, "Topics"),
    h("div", { class: "panel" },
      h("h2", {}, "Create a topic"),
      h("form", { class: "row", id: "create-form" },
        h("label", {}, "Name", h("input", { id: "create-name", required: true, placeholder: "orders" })),
        h("label", {}, "Partitions", h("input", { id: "create-partitions", type: "number", value: "1", min: "1", style: "width:90px" })),
        h("label", {}, "Replication", h("input", { id: "create-rf", type: "number", value: "1", min: "1", style: "width:90px" })),
        h("button", { id: "create-btn", type: "submit" }, "Create")),
      h("div", { id: "create-msg", class: "msg" })),
    h("div", { class: "panel" },
      h("div", { class: "row" },
        h("label", {}, "Filter", h("input", { id: "topic-filter", placeholder: "name contains…" })),
        h("label", { style: "flex-direction:row;align-items:center;gap:6px" },
          h("input", { id: "show-internal", type: "checkbox" }), "internal topics")),
      h("table", { id: "topics" },
        h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", { class: "num" }, "Partitions"),
          h("th", { class: "num" }, "Replication"), h("th", { class: "num" }, "Size"),
          h("th", { class: "num" }, "Messages"), h("th", { class: "num" }, "Msg/s"),
          h("th", { class: "num" }, "Under-replicated"))),
        h("tbody"))));
  $("#create-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const msg = $("#create-msg");
    try {
      const r = await api("/api/console/topics", {
        name: $("#create-name").value.trim(), partitions: Number($("#create-partitions").value),
        replication_factor: Number($("#create-rf").value) });
      setMsg(msg, `created ${r.name} (${r.partitions} partitions)`, true);
      await loadTopics();
    } catch (e) { setMsg(msg, e.message, false); }
  });
  $("#topic-filter").addEventListener("input", loadTopics);
  $("#show-internal").addEventListener("change", loadTopics);
  await loadTopics();
  every(5000, loadTopics);
}

async function loadTopics() {
  const data = await api("/api/console/topics");
  const filter = $("#topic-filter").value.trim().toLowerCase();
  const internal = $("#show-internal").checked;
  const rows = data.topics.filter((t) => (internal || !t.internal) && t.name.toLowerCase().includes(filter))
    .map((t) => h("tr", { "data-topic": t.name },
      h("td", {}, h("a", { href: "/topics/" + encodeURIComponent(t.name), "data-link": true }, t.name)),
      h("td", { class: "num" }, t.partitions), h("td", { class: "num" }, t.replication_factor),
      h("td", { class: "num" }, fmtBytes(t.size_bytes)), h("td", { class: "num" }, fmtNum(t.messages)),
      h("td", { class: "num" }, fmtRate(t.messages_per_sec)),
      h("td", { class: "num" }, t.under_replicated ? h("span", { class: "badge bad" }, t.under_replicated) : "0")));
  $("#topics tbody").replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 7, class: "muted" }, "no topics"))]));
}

async function pageTopic(name) {
  let t;
  try { t = await api("/api/console/topic?name=" + encodeURIComponent(name)); }
  catch (e) {
    main.replaceChildren(h("h1", {}, name), h("div", { class: "panel msg error", id: "topic-error" }, e.message),
      h("a", { href: "/topics", "data-link": true }, "← all topics"));
    return;
  }
  const partOptions = [h("option", { value: "" }, "all")].concat(t.partitions.map((p) => h("option", { value: p.partition }, p.partition)));
  main.replaceChildren(
    h("h1", {}, h("a", { href: "/topics", "data-link": true }, "Topics"), " / ", h("span", { id: "topic-name" }, t.name)),
    h("div", { class: "panel" }, h("h2", {}, "Partitions"),
      h("table", { id: "partitions" }, h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Leader"),
        h("th", {}, "Replicas"), h("th", {}, "ISR"),
        h("th", { title: "eligible leader replicas (KIP-966)" }, "ELR"), h("th", {}, "Last known ELR"),
        h("th", { class: "num" }, "Start offset"),
        h("th", { class: "num" }, "End offset"), h("th", { class: "num" }, "Size"))), h("tbody"))),
    h("div", { class: "panel" }, h("h2", {}, "Messages"),
      h("div", { class: "row" },
        h("label", {}, "Partition", h("select", { id: "browse-partition" }, ...partOptions)),
        h("label", {}, "From", h("select", { id: "browse-mode" },
          h("option", { value: "newest" }, "newest first"), h("option", { value: "offset" }, "offset"),
          h("option", { value: "timestamp" }, "timestamp"))),
        h("label", {}, "Offset", h("input", { id: "browse-offset", value: "0", style: "width:110px" })),
        h("label", {}, "Timestamp (ms or ISO)", h("input", { id: "browse-timestamp", placeholder: "2026-01-01T00:00:00Z", style: "width:200px" })),
        h("label", {}, "Page size", h("input", { id: "browse-limit", type: "number", value: "50", min: "1", max: "500", style: "width:80px" })),
        h("label", {}, "Show as", h("select", { id: "browse-format" },
          h("option", { value: "text" }, "text"), h("option", { value: "json" }, "JSON (pretty)"), h("option", { value: "hex" }, "hex"))),
        h("button", { id: "browse-load" }, "Load"),
        h("button", { id: "browse-more", class: "secondary" }, "Next page"),
        h("label", { style: "flex-direction:row;align-items:center;gap:6px" }, h("input", { id: "browse-tail", type: "checkbox" }), "live tail"),
        h("label", {}, "Search in page", h("input", { id: "browse-search", placeholder: "text…" }))),
      h("div", { id: "browse-msg", class: "msg" }),
      h("div", { class: "scroll" }, h("table", { id: "records" }, h("thead", {}, h("tr", {},
        h("th", { class: "num" }, "Partition"), h("th", { class: "num" }, "Offset"), h("th", {}, "Timestamp"),
        h("th", {}, "Key"), h("th", {}, "Value"), h("th", {}, "Headers"))), h("tbody")))),
    h("div", { class: "grid2" },
      h("div", { class: "panel" }, h("h2", {}, "Produce a record"),
        h("form", { id: "produce-form" },
          h("div", { class: "row" },
            h("label", {}, "Key", h("input", { id: "produce-key", placeholder: "(none)" })),
            h("label", {}, "Partition", h("select", { id: "produce-partition" },
              h("option", { value: "" }, "by key"), ...t.partitions.map((p) => h("option", { value: p.partition }, p.partition))))),
          h("label", {}, "Value", h("textarea", { id: "produce-value", placeholder: "{\"hello\": \"world\"}" })),
          h("label", {}, "Headers (one name=value a line)", h("textarea", { id: "produce-headers", style: "min-height:40px" })),
          h("div", { class: "row", style: "margin-top:8px" }, h("button", { id: "produce-btn", type: "submit" }, "Send"))),
        h("div", { id: "produce-msg", class: "msg" })),
      h("div", { class: "panel" }, h("h2", {}, "Configs"),
        h("div", { class: "scroll" }, h("table", { id: "configs" }, h("thead", {}, h("tr", {}, h("th", {}, "Name"), h("th", {}, "Value"), h("th", {}, "Source"))), h("tbody"))),
        h("div", { class: "row", style: "margin-top:8px" }, h("button", { id: "configs-save" }, "Save changed configs")),
        h("div", { id: "configs-msg", class: "msg" }))));
  fillPartitions(t);
  fillConfigs(t);
  const state = { next: null, older: null, mode: null, records: [] };
  const browse = async (more) => {
    const msg = $("#browse-msg");
    const mode = $("#browse-mode").value;
    const q = new URLSearchParams({ topic: name, limit: $("#browse-limit").value });
    const part = $("#browse-partition").value;
    if (part !== "") q.set("partition", part);
    if (more && state.next) {
      // newest first pages back to older records; the other modes continue forward
      const back = state.mode === "newest" || state.mode === "before";
      q.set("mode", back ? "before" : "tail");
      q.set("positions", Object.entries(back ? state.older : state.next).map(([p, o]) => p + ":" + o).join(","));
    } else {
      q.set("mode", mode);
      if (mode === "offset") q.set("offset", $("#browse-offset").value.trim());
      if (mode === "timestamp") {
        const raw = $("#browse-timestamp").value.trim();
        const ms = /^\d+$/.test(raw) ? Number(raw) : Date.parse(raw);
        if (Number.isNaN(ms)) { setMsg(msg, `not a timestamp: "${raw}" (milliseconds or an ISO date)`, false); return; }
        q.set("timestamp", String(ms));
      }
    }
    try {
      const page = await api("/api/console/messages?" + q.toString());
      if (page.mode !== "before") state.next = page.next;   // the live tail goes on from the newest
      state.older = page.older;
      state.mode = page.mode;
      $("#browse-more").textContent = page.mode === "newest" || page.mode === "before" ? "Older" : "Next page";
      state.records = page.records;
      drawRecords(state.records);
      const errs = page.errors.map((e) => e.message).join("; ");
      setMsg(msg, errs || `${page.records.length} record(s)` + (page.records.length ? "" : " — nothing there yet"), !errs);
    } catch (e) { setMsg(msg, e.message, false); }
  };
  const tail = async () => {
    if (!$("#browse-tail") || !$("#browse-tail").checked) return;
    if (!state.next) { await browse(false); return; }
    const q = new URLSearchParams({ topic: name, mode: "tail", limit: "500",
      positions: Object.entries(state.next).map(([p, o]) => p + ":" + o).join(",") });
    const part = $("#browse-partition").value;
    if (part !== "") q.set("partition", part);
    try {
      const page = await api("/api/console/messages?" + q.toString());
      state.next = page.next;
      if (page.records.length) {
        state.records = page.records.slice().reverse().concat(state.records).slice(0, 1000);
        drawRecords(state.records);
      }
      setMsg($("#browse-msg"), `live: ${state.records.length} record(s) shown`, true);
    } catch (e) { setMsg($("#browse-msg"), e.message, false); }
  };
  $("#browse-load").addEventListener("click", () => browse(false));
  $("#browse-more").addEventListener("click", () => browse(true));
  $("#browse-format").addEventListener("change", () => drawRecords(state.records));
  // positions belong to the partitions browsed: another choice starts the tail afresh
  $("#browse-partition").addEventListener("change", () => { state.next = null; state.older = null; });
  $("#browse-search").addEventListener("input", () => drawRecords(state.records));
  every(1000, tail);
  $("#produce-form").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const msg = $("#produce-msg");
    const headers = [];
    for (const line of $("#produce-headers").value.split("\n")) {
      if (!line.trim()) continue;
      const i = line.indexOf("=");
      if (i <= 0) { setMsg(msg, `bad header line "${line}": expected name=value`, false); return; }
      headers.push({ key: line.slice(0, i).trim(), value: line.slice(i + 1) });
    }
    const key = $("#produce-key").value;
    const part = $("#produce-partition").value;
    try {
      const r = await api("/api/console/produce", { topic: name, key: key === "" ? null : key,
        value: $("#produce-value").value, headers, partition: part === "" ? null : Number(part) });
      setMsg(msg, `written to partition ${r.partition} at offset ${r.offset}`, true);
      fillPartitions(await api("/api/console/topic?name=" + encodeURIComponent(name)));
    } catch (e) { setMsg(msg, e.message, false); }
  });
  $("#configs-save").addEventListener("click", async () => {
    const msg = $("#configs-msg");
    const set = {}; const del = [];
    for (const input of document.querySelectorAll("#configs input[data-config]")) {
      if (input.value === input.dataset.orig) continue;
      if (input.value.trim() === "") del.push(input.dataset.config); else set[input.dataset.config] = input.value.trim();
    }
    if (!Object.keys(set).length && !del.length) { setMsg(msg, "nothing changed", false); return; }
    try {
      const r = await api("/api/console/topic/configs", { topic: name, set, delete: del });
      setMsg(msg, "saved: " + r.changed.join(", "), true);
      fillConfigs(await api("/api/console/topic?name=" + encodeURIComponent(name)));
    } catch (e) { setMsg(msg, e.message, false); }
  });
  await browse(false);
}

function fillPartitions(t) {
  $("#partitions tbody").replaceChildren(...t.partitions.map((p) => h("tr", {},
    h("td", {}, p.partition),
    h("td", {}, p.leader < 0 ? h("span", { class: "badge bad" }, "offline") : "node " + p.leader),
    h("td", {}, p.replicas.join(", ")),
    h("td", {}, p.isr.length < p.replicas.length ? h("span", { class: "badge warn" }, p.isr.join(", ") || "none") : p.isr.join(", ")),
    h("td", { class: "elr" }, (p.elr || []).join(", ") || "-"),
    h("td", { class: "last-known-elr" }, (p.last_known_elr || []).join(", ") || "-"),
    h("td", { class: "num" }, p.error ? h("span", { class: "muted", title: p.error }, "on node " + p.leader) : fmtNum(p.log_start_offset)),
    h("td", { class: "num" }, p.error ? "" : fmtNum(p.high_watermark)),
    h("td", { class: "num" }, p.error ? "" : fmtBytes(p.size_bytes)))));
}

const SOURCES = { 1: "topic", 2: "broker (dynamic)", 3: "cluster default (dynamic)", 4: "broker (static)", 5: "default", 6: "logger" };
function fillConfigs(t) {
  $("#configs tbody").replaceChildren(...t.configs.map((c) => h("tr", {},
    h("td", { class: "cfg-name mono" }, c.name),
    h("td", {}, c.read_only ? h("span", { class: "mono" }, c.value ?? "") :
      h("input", { class: "cfg-input mono", "data-config": c.name, "data-orig": c.value ?? "", value: c.value ?? "" })),
    h("td", { class: "muted" }, SOURCES[c.source] || c.source))));
}

function highlight(text, needle) {
  if (!needle) return [text];
  const out = []; const lower = text.toLowerCase(); let i = 0;
  for (;;) {
    const j = lower.indexOf(needle, i);
    if (j < 0) { out.push(text.slice(i)); break; }
    out.push(text.slice(i, j), h("mark", {}, text.slice(j, j + needle.length)));
    i = j + needle.length;
  }
  return out;
}

function drawRecords(records) {
  const format = $("#browse-format").value;
  const needle = $("#browse-search").value.trim().toLowerCase();
  const rows = [];
  for (const r of records) {
    const key = render(r.key, format === "json" ? "text" : format);
    const value = render(r.value, format);
    const headers = r.headers.map((x) => x.key + "=" + render(x.value, "text").text).join("\n");
    const all = (key.text + "\n" + value.text + "\n" + headers).toLowerCase();
    if (needle && !all.includes(needle)) continue;
    rows.push(h("tr", { "data-offset": r.offset, "data-partition": r.partition },
      h("td", { class: "num" }, r.partition), h("td", { class: "num" }, r.offset),
      h("td", { class: "mono", style: "white-space:nowrap" }, fmtTime(r.timestamp)),
      h("td", {}, r.key === null ? h("span", { class: "muted" }, "null") : h("pre", { class: "rec-key" }, ...highlight(key.text, needle))),
      h("td", {}, r.value === null ? h("span", { class: "muted" }, "null") :
        h("pre", { class: "rec-value" }, ...highlight(value.text, needle)), r.truncated ? h("div", { class: "muted" }, `(first 64 KiB of ${fmtBytes(r.value_size)})`) : null),
      h("td", {}, headers ? h("pre", { class: "rec-headers" }, ...highlight(headers, needle)) : "")));
  }
  $("#records tbody").replaceChildren(...(rows.length ? rows :
    [h("tr", {}, h("td", { colspan: 6, class: "muted" }, records.length ? "no record in this page matches" : "no records"))]));
}

async function pageGroups() {
  main.replaceChildren(h("h1", {}, "Consumer groups"),
    h("div", { class: "panel" }, h("table", { id: "groups" }, h("thead", {}, h("tr", {},
      h("th", {}, "Group"), h("th", {}, "Type"), h("th", {}, "State"), h("th", { class: "num" }, "Members"),
      h("th", { class: "num" }, "Lag"), h("th", {}, "Topics"))), h("tbody"))));
  const load = async () => {
    const data = await api("/api/console/groups");
    const rows = data.groups.map((g) => h("tr", { "data-group": g.group_id },
      h("td", {}, h("a", { href: "/groups/" + encodeURIComponent(g.group_id), "data-link": true }, g.group_id)),
      h("td", { class: "group-type" }, g.group_type || "classic"), h("td", {}, stateBadge(g.state)), h("td", { class: "num" }, g.members),
      h("td", { class: "num" }, fmtNum(g.lag)), h("td", {}, g.topics.join(", "))));
    $("#groups tbody").replaceChildren(...(rows.length ? rows : [h("tr", {}, h("td", { colspan: 6, class: "muted" }, "no consumer groups"))]));
  };
  await load();
  every(3000, load);
}

function stateBadge(state) {
  const cls = state === "Stable" ? "ok" : state === "Empty" ? "" : state === "Dead" ? "bad" : "warn";
  return h("span", { class: "badge " + cls, "data-state": state }, state);
}

async function pageGroup(id) {
  main.replaceChildren(h("h1", {}, h("a", { href: "/groups", "data-link": true }, "Consumer groups"), " / ", id),
    h("div", { id: "group-error", class: "msg error" }),
    h("div", { class: "stats" },
      h("div", { class: "stat" }, h("div", { class: "v", id: "group-type" }, "…"), h("div", { class: "k" }, "type")),
      h("div", { class: "stat" }, h("div", { class: "v", id: "group-state" }, "…"), h("div", { class: "k" }, "state")),
      h("div", { class: "stat" }, h("div", { class: "v", id: "group-members" }, "…"), h("div", { class: "k" }, "members")),
      h("div", { class: "stat" }, h("div", { class: "v", id: "group-lag" }, "…"), h("div", { class: "k" }, "total lag"))),
    h("div", { class: "panel" }, h("h2", {}, "Offsets and lag"),
      h("table", { id: "offsets" }, h("thead", {}, h("tr", {}, h("th", {}, "Topic"), h("th", { class: "num" }, "Partition"),
        h("th", { class: "num", id: "offsets-from" }, "Committed"), h("th", { class: "num" }, "End offset"), h("th", { class: "num" }, "Lag"), h("th", {}, "Member"),
        h("th", { class: "num", id: "offsets-inflight", hidden: true, title: "records in flight on this node (acquired / available / acknowledged / archived)" }, "In flight"))), h("tbody")),
      h("p", { id: "group-dlq", class: "muted", hidden: true })),
    h("div", { class: "panel" }, h("h2", {}, "Members"),
      h("table", { id: "members" }, h("thead", {}, h("tr", {}, h("th", {}, "Member"), h("th", {}, "Client"), h("th", {}, "Host"), h("th", { id: "members-assigned" }, "Assignment"))), h("tbody"))),
    h("div", { class: "panel", id: "topology-panel", hidden: true }, h("h2", {}, "Topology"),
      h("table", { id: "topology" }, h("thead", {}, h("tr", {}, h("th", {}, "Subtopology"), h("th", {}, "Source topics"),
        h("th", {}, "Repartition sinks"), h("th", {}, "Repartition sources"), h("th", {}, "Changelogs"))), h("tbody"))),
    h("div", { class: "panel" }, h("h2", {}, "Reset offsets"),
      h("p", { class: "muted" }, "Only while the group has no members (stop its consumers first), as kafka-consumer-groups --reset-offsets."),
      h("div", { class: "row" },
        h("label", {}, "Topic", h("select", { id: "reset-topic" })),
        h("label", {}, "To", h("select", { id: "reset-to" }, h("option", { value: "earliest" }, "earliest"),
          h("option", { value: "latest" }, "latest"), h("option", { value: "offset" }, "offset"), h("option", { value: "timestamp" }, "timestamp"))),
        h("label", {}, "Offset / timestamp", h("input", { id: "reset-value", style: "width:200px" })),
        h("button", { id: "reset-btn" }, "Reset"),
        h("button", { id: "delete-btn", class: "danger" }, "Delete group")),
      h("div", { id: "reset-msg", class: "msg" })));
  const load = async () => {
    let g;
    try { g = await api("/api/console/group?id=" + encodeURIComponent(id)); setMsg($("#group-error"), ""); }
    catch (e) { setMsg($("#group-error"), e.message, false); return; }
    $("#group-type").textContent = g.group_type || "classic";
    $("#group-state").replaceChildren(stateBadge(g.state));
    $("#group-members").textContent = g.member_count;
    $("#group-lag").textContent = fmtNum(g.total_lag);
    $("#offsets tbody").replaceChildren(...g.offsets.map((o) => h("tr", { "data-tp": o.topic + ":" + o.partition },
      h("td", {}, o.topic), h("td", { class: "num" }, o.partition), h("td", { class: "num" }, o.committed_offset < 0 ? "–" : fmtNum(o.committed_offset)),
      h("td", { class: "num" }, fmtNum(o.log_end_offset)), h("td", { class: "num lag" }, fmtNum(o.lag)), h("td", { class: "mono" }, o.member_id || ""),
      ...(g.group_type === "share" ? [h("td", { class: "num in-flight", title: o.in_flight ? `acquired ${o.in_flight.acquired}, available ${o.in_flight.available}, acknowledged ${o.in_flight.acknowledged}, archived ${o.in_flight.archived}` : "led by another node" },
        o.in_flight ? fmtNum(o.in_flight.in_flight) + " (" + fmtNum(o.in_flight.acquired) + " acquired)" : "–")] : []))));
    // a share group's in-flight records (the partition leader's) and its dead-letter queue (KIP-1191)
    $("#offsets-inflight").hidden = g.group_type !== "share";
    const dlq = g.dead_letter_queue;
    $("#group-dlq").hidden = !dlq;
    if (dlq) $("#group-dlq").textContent = !dlq.topic ? "Dead-letter topic: none" :
      `Dead-letter topic: ${dlq.topic}${dlq.enabled ? "" : " (not in force: share.version below 2)"} — ${fmtNum(dlq.written)} written, ${fmtNum(dlq.dropped)} dropped`;
    // a share group's position is its start offset; a streams member runs tasks (subtopology:[partitions])
    $("#offsets-from").textContent = g.group_type === "share" ? "Start offset" : "Committed";
    $("#members-assigned").textContent = g.group_type === "streams" ? "Tasks" : "Assignment";
    const tasks = (t) => ["active", "standby", "warmup"].filter((k) => t[k].length)
      .map((k) => k + " " + t[k].map((x) => x.subtopology + ":[" + x.partitions.join(",") + "]").join(" ")).join("; ") || "none";
    $("#members tbody").replaceChildren(...g.members.map((m) => h("tr", {},
      h("td", { class: "mono" }, m.member_id), h("td", {}, m.client_id), h("td", {}, m.client_host),
      h("td", { class: "assigned" }, m.tasks ? tasks(m.tasks) : m.assignment.map((a) => a.topic + ": " + a.partitions.join(",")).join("; ")
        + (m.target_assignment && JSON.stringify(m.target_assignment) !== JSON.stringify(m.assignment)
          ? " (target " + m.target_assignment.map((a) => a.topic + ": " + a.partitions.join(",")).join("; ") + ")" : "")))));
    $("#topology-panel").hidden = !g.subtopologies;
    $("#topology tbody").replaceChildren(...(g.subtopologies || []).map((s) => h("tr", { "data-subtopology": s.subtopology },
      h("td", {}, s.subtopology), h("td", {}, s.source_topics.join(", ")), h("td", {}, s.repartition_sink_topics.join(", ")),
      h("td", {}, s.repartition_source_topics.join(", ")), h("td", {}, s.state_changelog_topics.join(", ")))));
    const sel = $("#reset-topic");
    if (sel.options.length !== g.topics.length) sel.replaceChildren(...g.topics.map((t) => h("option", { value: t }, t)));
  };
  $("#reset-btn").addEventListener("click", async () => {
    const to = $("#reset-to").value; const raw = $("#reset-value").value.trim();
    const body = { group: id, topic: $("#reset-topic").value, to };
    if (to === "offset" || to === "timestamp") {
      const n = /^\d+$/.test(raw) ? Number(raw) : (to === "timestamp" ? Date.parse(raw) : NaN);
      if (Number.isNaN(n)) { setMsg($("#reset-msg"), `"${raw}" is not a valid ${to}`, false); return; }
      body[to] = n;
    }
    try {
      const r = await api("/api/console/group/reset", body);
      setMsg($("#reset-msg"), "offsets reset: " + r.offsets.map((o) => `p${o.partition}→${o.offset}`).join(", "), true);
      await load();
    } catch (e) { setMsg($("#reset-msg"), e.message, false); }
  });
  $("#delete-btn").addEventListener("click", async () => {
    if (!confirm(`Delete consumer group "${id}" and its committed offsets?`)) return;
    try {
      await api("/api/console/group/delete", { group: id });
      setMsg($("#reset-msg"), "group deleted", true);
    } catch (e) { setMsg($("#reset-msg"), e.message, false); }
  });
  await load();
  every(2000, load);
}

function chart(title, points, key, fmt) {
  const w = 300, hgt = 70;
  const vals = points.map((p) => p[key]);
  const max = Math.max(1e-9, ...vals);
  const xy = vals.map((v, i) => [vals.length < 2 ? w : (i / (vals.length - 1)) * w, hgt - 4 - (v / max) * (hgt - 8)]);
  const line = xy.map(([x, y]) => x.toFixed(1) + "," + y.toFixed(1)).join(" ");
  const svg = `<svg viewBox="0 0 ${w} ${hgt}" preserveAspectRatio="none">` +
    (xy.length ? `<path d="M0,${hgt} L${line.replaceAll(" ", " L")} L${w},${hgt} Z"/><polyline points="${line}"/>` : "") + "</svg>";
  const last = vals.length ? vals[vals.length - 1] : null;
  return h("div", { class: "chart", "data-chart": key },
    h("div", { class: "title" }, h("span", {}, title), h("span", {}, last === null ? "–" : fmt(last))),
    vals.length ? h("div", { html: svg }) : h("div", { class: "muted empty" }, "collecting: a point every 5 s"));
}

async function pageCluster() {
  main.replaceChildren(h("h1", {}, "Cluster"), h("div", { id: "cluster" }, h("p", { class: "muted" }, "Loading…")));
  const load = async () => {
    const c = await api("/api/console/cluster");
    const q = c.quorum || {};
    const voters = (q.voters || []).map((v) => h("tr", {}, h("td", {}, "node " + v.replica_id + (v.replica_id === q.leader_id ? " (leader)" : "")),
      h("td", { class: "num" }, fmtNum(v.log_end_offset)), h("td", { class: "num" }, fmtNum(v.lag)),
      h("td", {}, v.last_caught_up_timestamp > 0 ? fmtTime(v.last_caught_up_timestamp) : "–")));
    $("#cluster").replaceChildren(
      h("div", { class: "stats" },
        h("div", { class: "stat" }, h("div", { class: "v mono" }, c.cluster_id), h("div", { class: "k" }, "cluster id")),
        h("div", { class: "stat" }, h("div", { class: "v", id: "controller-id" }, c.controller_id), h("div", { class: "k" }, "active controller")),
        h("div", { class: "stat" }, h("div", { class: "v" }, c.brokers.length), h("div", { class: "k" }, "brokers")),
        h("div", { class: "stat" }, h("div", { class: "v" }, c.topics + " / " + c.partitions), h("div", { class: "k" }, "topics / partitions")),
        h("div", { class: "stat" }, h("div", { class: "v", id: "urp-count" }, c.under_replicated.length), h("div", { class: "k" }, "under-replicated")),
        h("div", { class: "stat" }, h("div", { class: "v" }, c.offline_partitions.length), h("div", { class: "k" }, "offline partitions")),
        ...(c.rest_proxy ? [h("div", { class: "stat" }, h("div", { class: "v" }, h("a", { id: "rest-proxy-link", href: c.rest_proxy + "/v3/clusters/" + c.cluster_id }, "REST API")),
          h("div", { class: "k mono" }, c.rest_proxy))] : [])),
      h("div", { class: "grid2" },
        h("div", { class: "panel" }, h("h2", {}, "Brokers"), h("table", { id: "brokers" },
          h("thead", {}, h("tr", {}, h("th", {}, "Node"), h("th", {}, "Status"), h("th", {}, "Endpoints"), h("th", {}, "Rack"), h("th", { class: "num" }, "Leaders"))),
          h("tbody", {}, ...c.brokers.map((b) => h("tr", { "data-node": b.node_id },
            h("td", {}, "node " + b.node_id + (b.this_node ? " (this)" : "") + (b.voter ? " · voter" : "")),
            h("td", {}, h("span", { class: "badge " + (b.status === "online" ? "ok" : b.status === "offline" ? "bad" : "warn"), "data-status": b.status }, b.status)),
            h("td", { class: "mono" }, b.endpoints.join(" ")), h("td", {}, b.rack || "–"), h("td", { class: "num" }, b.leaders)))))),
        h("div", { class: "panel" }, h("h2", {}, "Metadata quorum"),
          q.error ? h("div", { class: "msg error" }, q.message || q.error) :
            h("div", {}, h("p", { class: "muted" }, `leader node ${q.leader_id}, epoch ${q.leader_epoch}, high watermark ${fmtNum(q.high_watermark)}`),
              h("table", { id: "voters" }, h("thead", {}, h("tr", {}, h("th", {}, "Voter"), h("th", { class: "num" }, "Log end"), h("th", { class: "num" }, "Lag"), h("th", {}, "Caught up"))),
                h("tbody", {}, ...voters))))),
      h("div", { class: "panel" }, h("h2", {}, "Last minutes (this node)"), h("div", { class: "charts" },
        chart("messages in /s", c.history, "messages_in", fmtRate), chart("bytes in /s", c.history, "bytes_in", fmtBytes),
        chart("bytes out /s", c.history, "bytes_out", fmtBytes), chart("requests /s", c.history, "requests", fmtRate),
        chart("connections", c.history, "connections", fmtNum), chart("under-replicated", c.history, "under_replicated", fmtNum))),
      h("div", { class: "panel" }, h("h2", {}, "Under-replicated partitions"),
        c.under_replicated.length ? h("table", { id: "urp" }, h("thead", {}, h("tr", {}, h("th", {}, "Partition"), h("th", {}, "Leader"), h("th", {}, "Replicas"), h("th", {}, "ISR"))),
          h("tbody", {}, ...c.under_replicated.map((u) => h("tr", {}, h("td", {}, u.topic + "-" + u.partition), h("td", {}, u.leader),
            h("td", {}, u.replicas.join(", ")), h("td", {}, u.isr.join(", ")))))) : h("p", { class: "muted" }, "none")));
  };
  await load();
  every(3000, load);
}

// ---------------------------------------------------------------- login
// With an authorizer on the broker every API answer needs a session: the login form asks for
// the name and password of a cluster user (SCRAM or PLAIN); the header shows who is in.
let who = null;

async function loadWho() {
  who = await api("/api/console/whoami");
  const el = $("#who");
  el.replaceChildren();
  if (who.login_required && who.logged_in) {
    el.append(h("span", { id: "principal" }, who.principal), " ",
      h("button", { id: "logout", type: "button", onclick: async () => {
        await api("/api/console/logout", {}); who = null; route();
      } }, "Log out"));
  }
  if (!who.login_required || who.logged_in) {
    api("/api/console/cluster").then((c) => { $("#node").textContent = `node ${c.node_id} · cluster ${c.cluster_id}`; }).catch(() => {});
  } else {
    $("#node").textContent = "";
  }
  return who;
}

function pageLogin() {
  timers.forEach(clearInterval); timers = [];
  const msg = h("p", { class: "msg" });
  const user = h("input", { name: "username", autocomplete: "username", required: true });
  const pass = h("input", { name: "password", type: "password", autocomplete: "current-password", required: true });
  const form = h("form", { id: "login", class: "card", onsubmit: async (ev) => {
    ev.preventDefault();
    setMsg(msg, "");
    try {
      await api("/api/console/login", { username: user.value, password: pass.value });
      await loadWho();
      route();
    } catch (e) { setMsg(msg, e.message, false); }
  } },
  h("h1", {}, "Log in"),
  h("p", { class: "muted" }, "This broker checks ACLs: log in as a user of the cluster (its SCRAM or PLAIN credentials)."),
  h("label", {}, "User ", user), h("label", {}, "Password ", pass),
  h("button", { type: "submit" }, "Log in"), msg);
  main.replaceChildren(form);
  user.focus();
}

// ---------------------------------------------------------------- routing
async function route() {
  timers.forEach(clearInterval); timers = [];
  showError(null);
  if (who === null) {
    try { await loadWho(); } catch (e) { showError(e.message); return; }
  }
  if (who.login_required && !who.logged_in) { pageLogin(); return; }
  const path = decodeURIComponent(location.pathname);
  const section = path.split("/")[1] || "topics";
  for (const a of document.querySelectorAll("header nav a")) a.classList.toggle("active", a.dataset.nav === section);
  try {
    if (path.startsWith("/topics/")) await pageTopic(path.slice("/topics/".length));
    else if (path.startsWith("/groups/")) await pageGroup(path.slice("/groups/".length));
    else if (section === "groups") await pageGroups();
    else if (section === "cluster") await pageCluster();
    else if (path.startsWith("/schemas/")) await pageSchema(path.slice("/schemas/".length));
    else if (section === "schemas") await pageSchemas();
    else await pageTopics();
  } catch (e) { showError(e.message); }
}

document.addEventListener("click", (ev) => {
  const a = ev.target.closest("a[href]");
  if (!a || a.origin !== location.origin || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
  ev.preventDefault();
  history.pushState(null, "", a.pathname);
  route();
});
window.addEventListener("popstate", route);
window.addEventListener("unhandledrejection", (ev) => showError(ev.reason && ev.reason.message || String(ev.reason)));
route();
