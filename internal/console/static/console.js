// taskd console: localises times and shows live events. The pages work
// without it (times then show in UTC); only the live events need it.
"use strict";

// relative says how far t is from now, as the server does: "3 s ago".
function relative(t, now) {
  let d = (t - now) / 1000;
  const future = d > 0;
  d = Math.abs(d);
  let s;
  if (d < 1) return "now";
  if (d < 60) s = Math.floor(d) + " s";
  else if (d < 3600) s = Math.floor(d / 60) + " min";
  else if (d < 172800) s = Math.floor(d / 3600) + " h";
  else s = Math.floor(d / 86400) + " d";
  return future ? "in " + s : s + " ago";
}

function pad(n, w) { return String(n).padStart(w || 2, "0"); }

// local formats a time in the viewer's zone, with the zone's offset.
function local(t) {
  const off = -t.getTimezoneOffset();
  const sign = off >= 0 ? "+" : "-";
  const a = Math.abs(off);
  return t.getFullYear() + "-" + pad(t.getMonth() + 1) + "-" + pad(t.getDate()) + " " +
    pad(t.getHours()) + ":" + pad(t.getMinutes()) + ":" + pad(t.getSeconds()) +
    " UTC" + sign + pad(Math.floor(a / 60)) + ":" + pad(a % 60);
}

// localise turns every <time datetime> under root into the viewer's zone
// (the UTC time stays in its title) and refreshes the relative time
// beside it.
function localise(root) {
  const now = Date.now();
  for (const el of root.querySelectorAll("time[datetime]")) {
    const t = new Date(el.getAttribute("datetime"));
    if (isNaN(t)) continue;
    if (!el.dataset.utc) {
      el.dataset.utc = el.textContent;
      el.title = el.textContent;
      el.textContent = local(t);
    }
    const rel = el.nextElementSibling;
    if (rel && rel.classList.contains("rel")) rel.textContent = "(" + relative(t, now) + ")";
  }
  for (const el of root.querySelectorAll("text[data-minute]")) {
    const t = new Date(el.dataset.minute);
    if (!isNaN(t)) el.textContent = pad(t.getHours()) + ":" + pad(t.getMinutes());
  }
}

function timeHTML(iso) {
  const t = document.createElement("time");
  t.setAttribute("datetime", iso);
  t.textContent = iso;
  const r = document.createElement("span");
  r.className = "rel";
  const f = document.createDocumentFragment();
  f.append(t, " ", r);
  return f;
}

function cell(tr, content, cls) {
  const td = document.createElement("td");
  if (cls) td.className = cls;
  if (content instanceof Node) td.append(content); else td.textContent = content == null ? "" : String(content);
  tr.append(td);
  return td;
}

function link(href, text) {
  const a = document.createElement("a");
  a.href = href;
  a.textContent = text;
  return a;
}

function badge(text) {
  const s = document.createElement("span");
  s.className = "state st-" + text.toLowerCase();
  s.textContent = text;
  return s;
}

// MAX_ROWS bounds the live table; older rows drop off the bottom.
const MAX_ROWS = 500;

function liveEvents(table) {
  const body = table.tBodies[0];
  const status = document.getElementById("stream-status");
  let source;
  let count = 0;
  const say = (s, warn) => { status.textContent = s; status.classList.toggle("warn", !!warn); };
  const open = () => {
    source = new EventSource(table.dataset.stream);
    source.onopen = () => say("Connected: events appear here as they happen (" + count + " so far).");
    source.onerror = () => say("Connection lost; reconnecting…", true);
    source.addEventListener("apierror", (m) => {
      const e = JSON.parse(m.data);
      source.close();
      if (e.code === "OutOfRange") { open(); return; } // the cursor expired: go on from now
      say("The API refused the event stream: " + e.code + ": " + e.message, true);
    });
    // The page fell behind the events: the server ended the stream with
    // the cursor of the last event shown as the id, and the browser
    // reconnects from it (Last-Event-ID), missing nothing.
    source.addEventListener("resume", () => say("Fell behind the events; catching up from the last one shown…", true));
    source.addEventListener("task", (m) => {
      const e = JSON.parse(m.data);
      count++;
      const tr = document.createElement("tr");
      tr.className = "fresh";
      tr.dataset.type = e.type;
      tr.dataset.task = e.task_id || "";
      const when = cell(tr, timeHTML(e.time));
      if (e.armed) {
        // Rows stay in the order of the cluster's writes (the stream's):
        // an armed run's start is written up to the look-ahead before its
        // fire time, which is its time, so it can be later than the rows
        // written after it, above.
        tr.dataset.armed = "true";
        const tag = document.createElement("span");
        tag.className = "tag";
        tag.textContent = "armed";
        tag.title = "written ahead of its fire time (--look-ahead); the handler is called at this time";
        when.append(" ", tag);
      }
      cell(tr, badge(e.type));
      cell(tr, e.identity ? link("/ui/identities?identity=" + encodeURIComponent(e.identity), e.identity) : "");
      cell(tr, e.task_id ? link("/ui/task?identity=" + encodeURIComponent(e.identity) + "&id=" + encodeURIComponent(e.task_id), e.task_id) : "", "mono");
      cell(tr, e.kind);
      cell(tr, e.node, "nowrap");
      cell(tr, e.run || "", "num");
      cell(tr, e.fence || "", "mono");
      cell(tr, e.outcome ? badge(e.outcome) : "");
      // next is the next fire time of NEXT_SCHEDULED and RETRYING.
      const next = e.next && (e.type === "NEXT_SCHEDULED" || e.type === "RETRYING");
      const msg = cell(tr, e.message || (next ? "next " + e.next : ""), "msg");
      msg.title = e.message || "";
      body.prepend(tr);
      while (body.rows.length > MAX_ROWS) body.deleteRow(body.rows.length - 1);
      localise(tr);
      say("Connected: events appear here as they happen (" + count + " so far).");
    });
  };
  open();
  window.addEventListener("pagehide", () => source.close());
}

document.addEventListener("DOMContentLoaded", () => {
  localise(document);
  setInterval(() => localise(document), 1000);
  const table = document.getElementById("events");
  if (table && table.dataset.stream && window.EventSource) liveEvents(table);
});
