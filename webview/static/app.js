// The live view: draws the fabric once from /api/model (one collapsible panel per
// plane: spines, leaves, NICs, hosts), then follows /api/stream (server-sent events,
// one reading a second) and recolours the links by state and load. Plain SVG, no
// library, nothing loaded from outside this server.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const COLLAPSE_ABOVE = 60; // switches: a larger fabric opens with plane 0 only
const ROW = { spine: 34, leaf: 130, nic: 226, host: 296 };
const NODE_H = 22;
const NIC_COLOURS = ["#1565c0", "#2e7d32", "#e65100", "#6a1b9a", "#00838f", "#c62828", "#4e342e", "#283593"];

let model = null;
const linkEls = []; // per model link: the <line> elements drawing it (one per panel it appears in)
const nodeEls = new Map(); // switch name -> its <g> elements
const history = []; // {t, rx: {nic: bytes/s}}
let latest = null;
let selected = null; // {kind: "switch"|"link", name}

function el(name, attrs, parent) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.appendChild(e);
  return e;
}

function short(name) {
  return name.replace(/^p\d+-/, "");
}

function spread(names, width) {
  // each name in the middle of an equal share of the row
  const pos = new Map();
  names.forEach((name, i) => pos.set(name, (width * (i + 0.5)) / names.length));
  return pos;
}

function addNode(svg, name, tier, x, y, w, sw) {
  const g = el("g", { class: `node ${tier}`, "data-node": name }, svg);
  if (sw) g.setAttribute("data-switch", name);
  el("rect", { x: x - w / 2, y: y - NODE_H / 2, width: w, height: NODE_H, rx: 4 }, g);
  const t = el("text", { x, y }, g);
  t.textContent = w < 50 ? short(name).replace("spine", "s").replace("leaf", "l") : short(name);
  el("title", {}, g).textContent = name;
  if (sw) {
    g.addEventListener("click", () => select({ kind: "switch", name }));
    if (!nodeEls.has(name)) nodeEls.set(name, []);
    nodeEls.get(name).push(g);
  }
}

function drawPlane(plane, links) {
  const hosts = model.hosts;
  const widest = Math.max(plane.spines.length, plane.leaves.length, hosts.length + plane.linux.length);
  const step = widest > 16 ? 44 : 90;
  const width = Math.max(320, widest * step);
  const w = Math.min(step - 6, 80);
  const details = document.createElement("details");
  details.className = "plane";
  details.dataset.plane = plane.plane;
  const summary = document.createElement("summary");
  summary.innerHTML = `plane ${plane.plane} <span class="sum"></span>`;
  details.appendChild(summary);
  const svg = el("svg", { viewBox: `0 0 ${width} ${ROW.host + 20}`, width, height: ROW.host + 20 }, details);
  const x = new Map([
    ...spread(plane.spines, width),
    ...spread(plane.leaves, width),
    ...spread([...hosts.map((h) => h.nic), ...plane.linux], width),
  ]);
  const hx = spread(hosts.map((h) => h.name), width);
  const y = (name) => (plane.spines.includes(name) ? ROW.spine : plane.leaves.includes(name) ? ROW.leaf : ROW.nic);
  const lines = el("g", {}, svg);
  for (const h of hosts) el("line", { class: "hostlink", x1: hx.get(h.name), y1: ROW.host, x2: x.get(h.nic), y2: ROW.nic }, lines);
  for (const [i, k] of links) {
    const line = el("line", { class: "link", "data-link": k.name, "data-state": "up", x1: x.get(k.a), y1: y(k.a), x2: x.get(k.b), y2: y(k.b) }, lines);
    el("title", {}, line).textContent = k.name;
    line.addEventListener("click", () => select({ kind: "link", name: k.name }));
    linkEls[i].push(line);
  }
  for (const s of plane.spines) addNode(svg, s, "spine", x.get(s), ROW.spine, w, true);
  for (const l of plane.leaves) addNode(svg, l, "leaf", x.get(l), ROW.leaf, w, true);
  for (const h of hosts) addNode(svg, h.nic, "nic", x.get(h.nic), ROW.nic, w, true);
  for (const lx of plane.linux) addNode(svg, lx, "host", x.get(lx), ROW.nic, w, false);
  for (const h of hosts) addNode(svg, h.name, "host", hx.get(h.name), ROW.host, w, false);
  return details;
}

function draw() {
  document.getElementById("title").textContent = `MRC fabric: ${model.summary}`;
  const root = document.getElementById("fabric");
  model.links.forEach(() => linkEls.push([]));
  const byPlane = model.planes.map(() => []);
  model.links.forEach((k, i) => byPlane[k.plane].push([i, k]));
  const frag = document.createDocumentFragment();
  for (const plane of model.planes) {
    const d = drawPlane(plane, byPlane[plane.plane]);
    d.open = model.switches <= COLLAPSE_ABOVE || plane.plane === 0;
    frag.appendChild(d);
  }
  root.appendChild(frag);
  document.body.dataset.switches = String(nodeEls.size);
}

function loadColour(pps) {
  // 0 packets/s: grey; then green (1/s) through orange to red (10,000/s and more), log scale
  if (!pps) return null;
  const f = Math.max(0, Math.min(1, Math.log10(pps) / 4));
  return `hsl(${Math.round(120 - 120 * f)}, 85%, ${Math.round(42 - 6 * f)}%)`;
}

function rate(n) {
  // bytes/s as B/s, kB/s, MB/s, GB/s
  const units = ["B/s", "kB/s", "MB/s", "GB/s"];
  let k = 0;
  while (n >= 1000 && k < units.length - 1) { n /= 1000; k += 1; }
  return `${n.toFixed(n < 10 && k ? 1 : 0)} ${units[k]}`;
}

function fmt(n) {
  return n === null || n === undefined ? "-" : Number(n).toLocaleString("en", { maximumFractionDigits: 1 });
}

function notGoodByLink(ev) {
  // link name -> how many EVs of the running transfers that cross it are not GOOD
  const out = new Map();
  for (const t of ev.transfers) for (const e of t.not_good) for (const l of e.links) out.set(l, (out.get(l) || 0) + 1);
  return out;
}

function applyLinks(snap) {
  const perPlane = model.planes.map(() => ({ down: 0, denied: 0, pps: 0 }));
  const notGood = notGoodByLink(snap.events);
  snap.links.forEach(([state, up, down], i) => {
    const k = model.links[i];
    const busiest = Math.max(up || 0, down || 0);
    const colour = state === "up" ? loadColour(busiest) : null;
    const width = state === "up" && busiest ? 2 + Math.min(5, Math.log10(1 + busiest)) : null;
    const bad = notGood.get(k.name);
    const tip = `${k.name}: ${state}` + (up === null ? " (no counters)" : `; ${fmt(up)} packets/s up, ${fmt(down)} packets/s down`) +
      (bad ? `; ${bad} EVs over it not GOOD` : "");
    for (const line of linkEls[i]) {
      if (line.dataset.state !== state) line.dataset.state = state;
      line.style.stroke = colour || "";
      line.style.strokeWidth = width ? String(width) : "";
      line.firstChild.textContent = tip;
    }
    const p = perPlane[k.plane];
    if (state.startsWith("down")) p.down += 1;
    if (state.endsWith("denied")) p.denied += 1;
    if (k.kind === "nic") p.pps += up || 0;
  });
  document.querySelectorAll("details.plane").forEach((d) => {
    const p = perPlane[Number(d.dataset.plane)];
    const bad = p.down || p.denied;
    d.querySelector(".sum").innerHTML = `${fmt(p.pps)} packets/s from the NICs` +
      (bad ? `; <span class="bad">${p.down} down, ${p.denied} denied</span>` : "");
  });
  for (const [name, gs] of nodeEls) {
    const silent = name in snap.silent;
    for (const g of gs) g.classList.toggle("silent", silent);
  }
}

function applyStatus(snap) {
  const s = document.getElementById("status");
  const when = new Date(snap.t * 1000).toLocaleTimeString();
  const silent = Object.keys(snap.silent).length;
  let text = `updated ${when}`;
  text += snap.counters ? `, counters every ${(snap.interval || 1).toFixed(1)} s` : ", no counters";
  if (silent) text += `, ${silent} switches not answering`;
  if (snap.problem) text += ` - ${snap.problem}`;
  s.textContent = text;
  s.classList.toggle("problem", Boolean(snap.problem || silent));
}

function applyTransfers(ev) {
  const box = document.getElementById("transfers");
  let html = "<h2>Transfers and their EVs</h2>";
  if (!ev.transfers.length) {
    html += `<p class="hint">No EV events yet (${ev.exists ? "" : "no "}file ${ev.path}).</p>`;
  } else {
    html += "<table><tr><th>transfer</th><th>GOOD</th><th>ASSUMED_BAD</th><th>DENIED</th><th>ERROR</th></tr>";
    for (const t of ev.transfers) {
      const c = t.counts;
      html += `<tr data-transfer="${t.host}-${t.peer}"><td>${t.host} &rarr; ${t.peer} (${t.transport})</td>` +
        `<td class="st-GOOD">${c.GOOD}</td><td class="st-ASSUMED_BAD">${c.ASSUMED_BAD}</td>` +
        `<td class="st-DENIED">${c.DENIED}</td><td class="st-ERROR">${c.ERROR}</td></tr>`;
      for (const e of t.not_good.slice(0, 12)) {
        html += `<tr><td class="l st-${e.state}" colspan="5">EV 0x${e.ev.toString(16).padStart(4, "0")} (plane ${e.plane}) ${e.state}` +
          ` ${e.cause ? "(" + e.cause + ")" : ""} ${e.links.join(", ")}</td></tr>`;
      }
      if (t.not_good.length > 12) html += `<tr><td class="l" colspan="5">... ${t.not_good.length - 12} more</td></tr>`;
    }
    html += "</table>";
  }
  if (ev.malformed) html += `<p class="hint">${ev.malformed} of ${ev.lines} lines skipped (not EV events).</p>`;
  box.innerHTML = html;
  const guard = document.getElementById("guard");
  guard.innerHTML = ev.guard.length ? "<h2>Controller actions</h2>" + ev.guard.slice().reverse().map((g) =>
    `<div>${new Date((g.t || 0) * 1000).toLocaleTimeString()} ${g.new || ""} ${(g.links || []).join(", ")} ${g.cause || ""}</div>`).join("") : "";
  guard.style.display = ev.guard.length ? "" : "none";
}

function applyChart() {
  const svg = document.getElementById("rx");
  svg.replaceChildren();
  if (history.length < 2) return;
  const nics = model.hosts.map((h) => h.nic);
  const t0 = history[0].t;
  const t1 = history[history.length - 1].t;
  let top = 1;
  for (const h of history) for (const n of nics) top = Math.max(top, h.rx[n] || 0);
  const X = (t) => 40 + ((t - t0) / Math.max(1, t1 - t0)) * 350;
  const Y = (v) => 145 - (v / top) * 130;
  el("line", { x1: 40, y1: 145, x2: 390, y2: 145, stroke: "#999" }, svg);
  el("text", { x: 2, y: 18, "font-size": 10 }, svg).textContent = rate(top);
  el("text", { x: 2, y: 145, "font-size": 10 }, svg).textContent = "0";
  el("text", { x: 40, y: 158, "font-size": 10 }, svg).textContent = `last ${Math.round(t1 - t0)} s`;
  nics.forEach((n, i) => {
    const pts = history.map((h) => `${X(h.t).toFixed(1)},${Y(h.rx[n] || 0).toFixed(1)}`).join(" ");
    el("polyline", { points: pts, fill: "none", stroke: NIC_COLOURS[i % NIC_COLOURS.length], "stroke-width": 1.5, "data-nic": n }, svg);
  });
  document.getElementById("rx-legend").innerHTML = nics.map((n, i) =>
    `<span><i style="background:${NIC_COLOURS[i % NIC_COLOURS.length]}"></i>${n} (${model.hosts[i].name})</span>`).join("");
}

function portTable(data, only) {
  const fabric = data.program === "fabric";
  let html = `<table><tr><th>port</th><th>to</th><th>rx</th><th>tx</th><th>rx/s</th><th>tx/s</th>` +
    (fabric ? '<th>trims</th><th>CE</th><th title="deepest egress queue (packets) since the register was reset">q</th>' : "") + "</tr>";
  for (const r of data.ports) {
    if (only && r.link !== only) continue;
    html += `<tr data-port="${r.port}"><td>${r.port}</td><td class="l">${r.peer ? short(r.peer) : ""}</td><td>${fmt(r.rx_packets)}</td>` +
      `<td>${fmt(r.tx_packets)}</td><td>${fmt(r.rx_pps)}</td><td>${fmt(r.tx_pps)}</td>` +
      (fabric ? `<td>${fmt(r.trimmed_packets)}</td><td>${fmt(r.ce_marked_packets)}</td><td>${fmt(r.max_qdepth)}</td>` : "") + "</tr>";
  }
  html += "</table>";
  const drops = data.drops.map((d) => `${d.name.toLowerCase()} ${fmt(d.packets)}`).join(", ");
  html += `<p class="hint">drops (whole switch, by reason): ${drops || "none"}` +
    (data.answered ? "" : `; not answering: ${data.why_not || "no reading yet"}`) + "</p>";
  return html;
}

async function fetchSwitch(name) {
  const r = await fetch(`/api/switch/${encodeURIComponent(name)}`);
  return r.ok ? r.json() : null;
}

async function showDetails() {
  const box = document.getElementById("details");
  if (!selected) return;
  let html = "";
  if (selected.kind === "switch") {
    const d = await fetchSwitch(selected.name);
    html = `<h2>${selected.name} (${d ? d.program : "?"}.p4)</h2>` + (d ? portTable(d, null) : "");
  } else {
    const k = model.links.find((l) => l.name === selected.name);
    const [a, b] = await Promise.all([fetchSwitch(k.a), fetchSwitch(k.b)]);
    html = `<h2>link ${k.name}</h2>`;
    for (const [end, d] of [[k.a, a], [k.b, b]]) html += `<h3>${end}</h3>` + (d ? portTable(d, k.name) : "");
  }
  box.innerHTML = html;
}

function select(what) {
  document.querySelectorAll(".selected").forEach((e) => e.classList.remove("selected"));
  selected = what;
  const els = what.kind === "switch" ? nodeEls.get(what.name) || [] : linkEls[model.links.findIndex((l) => l.name === what.name)] || [];
  for (const e of els) e.classList.add("selected");
  showDetails();
}

function apply(snap) {
  latest = snap;
  applyLinks(snap);
  applyStatus(snap);
  applyTransfers(snap.events);
  if (snap.rx && (!history.length || history[history.length - 1].t !== snap.counted_at)) {
    history.push({ t: snap.counted_at, rx: snap.rx });
    while (history.length > 120) history.shift();
  }
  applyChart();
  if (selected) showDetails();
  document.body.dataset.seq = String(snap.seq);
  document.body.dataset.t = String(snap.t);
  document.body.dataset.stateRead = String(snap.state_read);
}

async function start() {
  model = await (await fetch("/api/model")).json();
  draw();
  const state = await (await fetch("/api/state")).json();
  history.push(...state.history);
  apply(state);
  const stream = new EventSource("/api/stream");
  stream.onmessage = (m) => {
    const snap = JSON.parse(m.data);
    if (!latest || snap.seq !== latest.seq) apply(snap);
  };
  stream.onerror = () => {
    document.getElementById("status").textContent = "connection lost; retrying...";
    document.getElementById("status").classList.add("problem");
  };
}

start();
