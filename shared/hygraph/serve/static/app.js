// The page of `hygraph serve`: plain JavaScript over the JSON API (/v1), no build step.
// Every text from the index is put on the page with textContent, never as HTML.
"use strict";

const API = "/v1";
const state = { methods: [], defaultMethod: null, docOffset: 0, docPage: 20, polling: null };

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) node.append(child);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message || "";
  box.hidden = !message;
}

async function api(path, options = {}) {
  const key = document.getElementById("api-key").value || localStorage.getItem("hygraph-key");
  const headers = Object.assign({}, options.headers || {});
  if (key) headers["X-API-Key"] = key;
  if (options.json !== undefined) {
    headers["Content-Type"] = "application/json";
    options.body = JSON.stringify(options.json);
  }
  const response = await fetch(API + path, { method: options.method || "GET", headers,
    body: options.body });
  let body = null;
  try { body = await response.json(); } catch (e) { body = null; }
  if (!response.ok) {
    const message = body && body.error ? body.error.message : `HTTP ${response.status}`;
    throw new Error(message);
  }
  return body;
}

// ------------------------------------------------------------------ tabs

function openTab(name) {
  for (const button of document.querySelectorAll(".tab")) {
    button.classList.toggle("active", button.dataset.tab === name);
  }
  for (const section of document.querySelectorAll("main > section")) {
    section.hidden = section.id !== `tab-${name}`;
  }
  showError("");
  if (name === "documents") { loadDocuments(); loadJobs(); }
  if (name === "builds") loadBuilds();
  if (name === "bench") loadBench();
}

// ------------------------------------------------------------------ asking

async function loadMethods() {
  const info = await api("/info");
  document.getElementById("index-name").textContent = info.path;
  const listed = await api("/methods");
  state.defaultMethod = listed.default;
  state.methods = listed.methods.filter((m) => m.built);
  const a = document.getElementById("method-a");
  const b = document.getElementById("method-b");
  for (const m of state.methods) {
    const label = m.recommended ? `${m.name} (recommended)` : m.name;
    a.append(el("option", { value: m.name, text: label }));
    b.append(el("option", { value: m.name, text: label }));
  }
  a.value = state.defaultMethod;
}

function entityLabels(evidence) {
  if (!evidence) return [];
  const labels = evidence.nodes.filter((n) => n.kind === "entity").map((n) => n.label);
  return [...new Set(labels)].filter((l) => l && l.length > 1).sort((x, y) => y.length - x.length);
}

function highlighted(text, labels) {
  const p = el("p");
  if (!labels.length) { p.textContent = text; return p; }
  // Whole words only: "Reach" is not highlighted inside "reaching".
  const escaped = labels.map((l) => l.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"));
  const pattern = new RegExp(`(?<![\\p{L}\\p{N}])(${escaped.join("|")})(?![\\p{L}\\p{N}])`,
    "giu");
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    p.append(text.slice(last, match.index));
    p.append(el("mark", { text: match[0] }));
    last = match.index + match[0].length;
  }
  p.append(text.slice(last));
  return p;
}

function facts(evidence) {
  if (!evidence) return [];
  const names = Object.fromEntries(evidence.nodes.map((n) => [n.id, n.label]));
  return evidence.edges.filter((e) => e.kind === "relation")
    .map((e) => `${names[e.source] || e.source} — ${e.label} — ${names[e.target] || e.target}`);
}

function drawGraph(container, evidence) {
  if (!window.cytoscape || !evidence || !evidence.nodes.length) {
    container.textContent = "no graph evidence for this method";
    return null;
  }
  const ids = new Set(evidence.nodes.map((n) => n.id));
  const elements = [
    ...evidence.nodes.map((n) => ({ data: { id: n.id, label: n.kind === "chunk"
      ? `#${n.rank || ""} ${n.doc_id || n.label}` : n.label, kind: n.kind, role: n.role } })),
    ...evidence.edges.filter((e) => ids.has(e.source) && ids.has(e.target))
      .map((e, i) => ({ data: { id: `e${i}`, source: e.source, target: e.target,
        label: e.kind === "relation" ? e.label : "", kind: e.kind } })),
  ];
  const cy = cytoscape({
    container,
    elements,
    layout: { name: "preset" },
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 9, "text-wrap": "ellipsis",
        "text-max-width": 120, "background-color": "#4a78c2", width: 18, height: 18 } },
      { selector: 'node[role = "seed"]', style: { "background-color": "#d9822b", width: 24,
        height: 24 } },
      { selector: 'node[kind = "chunk"]', style: { shape: "round-rectangle",
        "background-color": "#3f9e6b", width: 26, height: 18 } },
      { selector: 'node[role = "community"]', style: { shape: "hexagon",
        "background-color": "#8a5cc2" } },
      { selector: "edge", style: { width: 1.2, "line-color": "#b7bfcf", "curve-style": "bezier",
        label: "data(label)", "font-size": 7, color: "#556" } },
      { selector: 'edge[kind = "relation"]', style: { "line-color": "#d9822b", width: 2 } },
    ],
  });
  // Laid out once the box has its size, and fitted to it when the layout stops.
  const layout = cy.layout({ name: "cose", animate: false, padding: 30, nodeRepulsion: 9000,
    idealEdgeLength: 90, randomize: true });
  layout.one("layoutstop", () => { cy.resize(); cy.fit(undefined, 30); });
  layout.run();
  window.hygraphGraphs = (window.hygraphGraphs || []).concat([cy]);  // for tests and the console
  return cy;
}

function renderResult(body) {
  const box = el("div", { class: "result", "data-method": body.method });
  box.append(el("h2", { text: `${body.method} — ${body.passages.length} passages, `
    + `${Math.round(body.usage.retrieve_seconds * 1000)} ms` }));
  const labels = entityLabels(body.evidence);
  for (const p of body.passages) {
    const item = el("div", { class: "passage" });
    item.append(el("span", { class: "rank", text: `#${p.rank}` }),
      el("strong", { text: p.title || p.doc_id || p.chunk_id }),
      el("span", { class: "score", text: p.score.toFixed(3) }),
      highlighted(p.text, labels));
    item.title = "click to show the whole passage";
    item.addEventListener("click", () => item.classList.toggle("open"));
    box.append(item);
  }
  const used = facts(body.evidence);
  if (used.length) {
    box.append(el("div", { class: "muted", text: "facts the method used:" }));
    const list = el("ul", { class: "facts" });
    for (const f of used.slice(0, 12)) list.append(el("li", { text: f }));
    box.append(list);
  }
  const graph = el("div", { class: "graph" });
  box.append(graph);
  return { box, graph, evidence: body.evidence };
}

async function ask(event) {
  event.preventDefault();
  showError("");
  const question = document.getElementById("question").value;
  const topK = Number(document.getElementById("top-k").value) || 5;
  const chosen = [document.getElementById("method-a").value, document.getElementById("method-b").value]
    .filter((m, i, all) => m && all.indexOf(m) === i);
  const results = document.getElementById("results");
  results.replaceChildren(el("p", { class: "muted", text: "retrieving…" }));
  try {
    const bodies = [];
    for (const method of chosen) {
      bodies.push(await api("/retrieve", { method: "POST",
        json: { question, method, top_k: topK, evidence: true } }));
    }
    results.replaceChildren();
    window.hygraphGraphs = [];
    // Every column is on the page before any graph is drawn, so each graph is laid out
    // in its box's final size.
    const shown = bodies.map(renderResult);
    for (const s of shown) results.append(s.box);
    for (const s of shown) drawGraph(s.graph, s.evidence);
  } catch (err) {
    results.replaceChildren();
    showError(err.message);
  }
}

// ------------------------------------------------------------------ documents and jobs

async function loadDocuments() {
  try {
    const page = await api(`/documents?offset=${state.docOffset}&limit=${state.docPage}`);
    document.getElementById("doc-total").textContent = `(${page.total})`;
    const body = document.querySelector("#doc-table tbody");
    body.replaceChildren();
    for (const d of page.documents) {
      const remove = el("button", { text: "delete" });
      remove.addEventListener("click", () => removeDocument(d.id));
      const added = d.added_at ? new Date(d.added_at * 1000).toLocaleString() : "";
      body.append(el("tr", {}, el("td", { text: d.id }), el("td", { text: d.title || "" }),
        el("td", { text: String(d.chunks) }), el("td", { text: added }), el("td", {}, remove)));
    }
    document.getElementById("doc-prev").disabled = state.docOffset === 0;
    document.getElementById("doc-next").disabled = state.docOffset + state.docPage >= page.total;
  } catch (err) { showError(err.message); }
}

async function removeDocument(id) {
  if (!confirm(`Delete ${id} and everything derived only from it?`)) return;
  try { await api(`/documents/${encodeURIComponent(id)}`, { method: "DELETE" }); pollJobs(); }
  catch (err) { showError(err.message); }
}

async function addDocument(event) {
  event.preventDefault();
  const files = document.getElementById("doc-files").files;
  try {
    if (files.length) {
      const form = new FormData();
      for (const f of files) form.append("files", f);
      await api("/documents/files", { method: "POST", body: form });
    } else {
      const text = document.getElementById("doc-text").value;
      const title = document.getElementById("doc-title").value || null;
      await api("/documents", { method: "POST", json: { documents: [{ text, title }] } });
    }
    document.getElementById("doc-form").reset();
    pollJobs();
  } catch (err) { showError(err.message); }
}

async function loadJobs() {
  const listed = await api("/jobs");
  const list = document.getElementById("jobs");
  list.replaceChildren();
  for (const job of listed.jobs.slice().reverse()) {
    const what = job.kind === "delete" ? job.detail.doc_id : `${job.detail.count} document(s)`;
    const took = job.finished && job.started ? ` in ${(job.finished - job.started).toFixed(1)} s` : "";
    const p = job.progress || {};
    const step = job.status === "running" && p.stage
      ? ` (${p.stage}: ${p.done}${p.total ? ` of ${p.total}` : ""})` : "";
    list.append(el("li", { text: `${job.kind} ${what}: ${job.status}${step}${took}`
      + (job.error ? ` — ${job.error}` : "") }));
  }
  return listed.jobs.some((j) => j.status === "queued" || j.status === "running");
}

function pollJobs() {
  if (state.polling) return;
  state.polling = setInterval(async () => {
    try {
      const busy = await loadJobs();
      if (!busy) { clearInterval(state.polling); state.polling = null; loadDocuments(); }
    } catch (err) { clearInterval(state.polling); state.polling = null; showError(err.message); }
  }, 1000);
}

// ------------------------------------------------------------------ builds and recall

async function loadBuilds() {
  const box = document.getElementById("builds");
  try {
    const { builds } = await api("/builds");
    const table = el("table");
    table.append(el("tr", {}, ...["finished", "seconds", "documents", "stage", "stage s",
      "LLM calls", "tokens", "embeddings"].map((h) => el("th", { text: h }))));
    for (const b of builds.slice().reverse()) {
      const stages = Object.entries((b.usage && b.usage.stages) || {});
      stages.forEach(([name, s], i) => {
        const first = i === 0;
        table.append(el("tr", {},
          el("td", { text: first ? new Date(b.finished_at * 1000).toLocaleString() : "" }),
          el("td", { text: first ? String(b.seconds) : "" }),
          el("td", { text: first ? String(b.documents_added + b.documents_replaced) : "" }),
          el("td", { text: name }), el("td", { text: (s.seconds || 0).toFixed(2) }),
          el("td", { text: String(s.llm_calls || 0) }),
          el("td", { text: String((s.prompt_tokens || 0) + (s.completion_tokens || 0)) }),
          el("td", { text: String(s.embeddings || 0) })));
      });
    }
    box.replaceChildren(table);
  } catch (err) { showError(err.message); }
}

async function loadBench() {
  const box = document.getElementById("bench");
  try {
    const report = await api("/bench");
    const bars = el("div", { class: "bars" });
    for (const [name, m] of Object.entries(report.methods)) {
      for (const [k, value] of Object.entries(m.recall)) {
        bars.append(el("span", { text: `${name} R@${k}` }),
          el("div", { class: `bar k${k}`, style: `width:${Math.max(0, value)}%` }),
          el("span", { text: value.toFixed(1) }));
      }
    }
    box.replaceChildren(el("p", { class: "muted", text: `${report.dataset || ""} — ${report.file}`
      + (report.date ? `, ${report.date}` : "") }), bars);
  } catch (err) {
    box.replaceChildren(el("p", { class: "muted", text: err.message }));
  }
}

// ------------------------------------------------------------------ start

document.addEventListener("DOMContentLoaded", async () => {
  const key = document.getElementById("api-key");
  key.value = localStorage.getItem("hygraph-key") || "";
  key.addEventListener("change", () => { localStorage.setItem("hygraph-key", key.value);
    loadMethods().catch((err) => showError(err.message)); });
  for (const button of document.querySelectorAll(".tab")) {
    button.addEventListener("click", () => openTab(button.dataset.tab));
  }
  document.getElementById("ask-form").addEventListener("submit", ask);
  document.getElementById("doc-form").addEventListener("submit", addDocument);
  document.getElementById("doc-prev").addEventListener("click", () => {
    state.docOffset = Math.max(0, state.docOffset - state.docPage); loadDocuments(); });
  document.getElementById("doc-next").addEventListener("click", () => {
    state.docOffset += state.docPage; loadDocuments(); });
  try { await loadMethods(); } catch (err) { showError(err.message); }
});
