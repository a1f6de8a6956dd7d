// chaperone's web app: submit, watch and look at jobs through the public /v1 API, as any
// client would. The page's jobs belong to its session cookie, or to an API key pasted in
// the header (kept in this tab's sessionStorage and sent as X-API-Key).
import { readNPZ } from "./npz.js";
import { drawPAE, pca, scatter } from "./charts.js";
import { Viewer, PLDDT_BANDS } from "./viewer.js";

const main = document.getElementById("main");
const TERMINAL = new Set(["succeeded", "failed", "canceled"]);
const LIST_WAIT = 25; // seconds a job list holds on its oldest active job
const JOB_WAIT = 5; // seconds a job page holds, so that progress and log move along
const KEY = "chaperone.key";

// ---- talking to the API ----

async function api(path, { method = "GET", body, headers = {}, signal } = {}) {
  const h = { ...headers };
  const key = sessionStorage.getItem(KEY);
  if (key) h["X-API-Key"] = key;
  if (body !== undefined) h["Content-Type"] = "application/json";
  const res = await fetch(path, { method, headers: h, signal, body: body === undefined ? undefined : JSON.stringify(body) });
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await res.json() : null;
  return { status: res.status, ok: res.ok, data, res };
}

async function download(path, signal) {
  const key = sessionStorage.getItem(KEY);
  const res = await fetch(path, { headers: key ? { "X-API-Key": key } : {}, signal });
  if (!res.ok) throw new Error(`${path}: ${res.status}`);
  return res;
}

let catalogPromise;
const catalog = () => (catalogPromise ??= api("/v1/models").then(r => r.data));

// ---- small DOM helpers ----

function h(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k === "class") e.className = v;
    else e.setAttribute(k, v === true ? "" : v);
  }
  e.append(...children.flat().filter(c => c !== undefined && c !== null && c !== false));
  return e;
}

const fmtTime = s => (s ? new Date(s).toLocaleString() : "—");

// fmtWhen is a time short enough for a list on a phone: the time of day for today, the
// day for this year, the date before that. The full time is the element's title.
function fmtWhen(s) {
  if (!s) return "—";
  const d = new Date(s), now = new Date();
  const text = d.toDateString() === now.toDateString() ? d.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })
    : d.getFullYear() === now.getFullYear() ? d.toLocaleDateString([], { month: "short", day: "numeric" })
    : d.toISOString().slice(0, 10);
  return h("time", { datetime: s, title: d.toLocaleString() }, text);
}

const KIND_LABELS = { predict: "Structure prediction", design: "Design", embed: "Embedding" };

// jobTitle is a job's name, else its kind and the first 8 characters of its id (as the
// command line shows them, and takes them).
const jobTitle = j => j.name || `${KIND_LABELS[j.kind]} ${j.id.slice(0, 8)}`;

function fmtDuration(ms) {
  const s = Math.max(0, Math.round(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${s % 60}s`;
  return `${Math.floor(m / 60)}h ${m % 60}m`;
}

const fmtValue = v => (typeof v === "number" ? (Number.isInteger(v) ? String(v) : v.toFixed(3)) :
  typeof v === "boolean" ? (v ? "yes" : "no") : v === null || v === undefined ? "—" :
  typeof v === "object" ? JSON.stringify(v) : String(v));

function pill(status) { return h("span", { class: `pill ${status}` }, status); }

function progressBar(job) {
  // Without a fraction from the engine, done of total is one; none done yet is unknown.
  const fraction = job.progress ?? (job.done ? job.done / job.total : null);
  const active = !TERMINAL.has(job.status);
  const pct = job.status === "succeeded" ? 100 : Math.round((fraction ?? 0) * 100);
  return h("div", { class: `bar${active && fraction === null ? " indeterminate" : ""}`, role: "progressbar",
    "aria-valuemin": 0, "aria-valuemax": 100, "aria-valuenow": fraction === null ? undefined : pct,
    "aria-label": "progress" }, h("span", { style: `width:${pct}%` }));
}

// sleep ends after ms, or at once when signal aborts.
const sleep = (ms, signal) => new Promise(resolve => {
  const t = setTimeout(resolve, ms);
  signal.addEventListener("abort", () => { clearTimeout(t); resolve(); }, { once: true });
});

// downloadLink is a plain link, but when a key is in use it fetches the file with the key
// itself, since a followed link carries no header.
function downloadLink(url, label, className) {
  const link = h("a", { href: url, download: "", class: className, onclick: async ev => {
    if (!sessionStorage.getItem(KEY)) return;
    ev.preventDefault();
    try {
      const blob = await (await download(url)).blob();
      const a = h("a", { href: URL.createObjectURL(blob), download: url.split("/").pop() });
      a.click();
      setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    } catch (err) {
      link.title = `The download failed: ${err.message}`;
    }
  } }, label);
  return link;
}

// sortableTable renders rows under columns [{key, label, num}], sorted by a header click;
// onSelect makes rows selectable by click, Enter or Space.
function sortableTable(columns, rows, { onSelect, rowKey, selected, label } = {}) {
  let sortKey = null, asc = true;
  const tbody = h("tbody");
  const headCells = columns.map(c => h("th", { class: c.num ? "num" : undefined, scope: "col" },
    h("button", { type: "button", onclick: () => { asc = sortKey === c.key ? !asc : !c.num; sortKey = c.key; paint(); } }, c.label)));
  function paint() {
    headCells.forEach((th, i) => th.setAttribute("aria-sort", columns[i].key === sortKey ? (asc ? "ascending" : "descending") : "none"));
    const sorted = sortKey === null ? rows : [...rows].sort((a, b) => {
      const x = a[sortKey], y = b[sortKey];
      if (x === y) return 0;
      if (x === undefined || x === null) return 1;
      if (y === undefined || y === null) return -1;
      return (x < y ? -1 : 1) * (asc ? 1 : -1);
    });
    tbody.replaceChildren(...sorted.map(r => {
      const tr = h("tr", onSelect ? { class: "link", tabindex: 0, "aria-selected": String(rowKey(r) === selected) } : {},
        columns.map(c => h("td", { class: c.num ? "num" : undefined }, c.render ? c.render(r) : fmtValue(r[c.key]))));
      if (rowKey && rowKey(r) === selected) tr.classList.add("selected");
      if (onSelect) {
        tr.addEventListener("click", ev => { if (!ev.target.closest("a,button")) { selected = rowKey(r); paint(); onSelect(r); } });
        tr.addEventListener("keydown", ev => {
          if (ev.target === tr && (ev.key === "Enter" || ev.key === " ")) { ev.preventDefault(); selected = rowKey(r); paint(); onSelect(r); tbody.querySelector(`tr[aria-selected="true"]`)?.focus(); }
        });
      }
      return tr;
    }));
  }
  paint();
  return h("div", { class: "scroll" }, h("table", { "aria-label": label }, h("thead", {}, h("tr", {}, headCells)), tbody));
}

// ---- the API key panel ----

function setupKeyPanel() {
  const input = document.getElementById("key-input");
  const summary = document.getElementById("key-summary");
  const show = () => {
    const key = sessionStorage.getItem(KEY);
    summary.textContent = key ? `API key …${key.slice(-4)}` : "API key";
  };
  document.getElementById("key-form").addEventListener("submit", ev => {
    ev.preventDefault();
    if (input.value.trim()) sessionStorage.setItem(KEY, input.value.trim());
    input.value = "";
    document.getElementById("key-panel").open = false;
    show(); route();
  });
  document.getElementById("key-clear").addEventListener("click", () => {
    sessionStorage.removeItem(KEY);
    document.getElementById("key-panel").open = false;
    show(); route();
  });
  show();
}

// ---- the submit forms ----

const KINDS = [
  { kind: "predict", label: "Predict a structure", path: "/v1/predictions" },
  { kind: "design", label: "Design a binder", path: "/v1/designs" },
  { kind: "embed", label: "Embed sequences", path: "/v1/embeddings" },
];

// field builds a labelled control; fields lists the request fields whose 400 lands here.
function field(id, labelText, control, { help, fields }) {
  control.id = id;
  const error = h("p", { class: "field-error", id: `${id}-error`, role: "alert" });
  control.setAttribute("aria-describedby", `${id}-error${help ? ` ${id}-help` : ""}`);
  return h("div", { class: "field", "data-fields": fields.join(" ") },
    h("label", { for: id }, labelText), control, help ? h("p", { class: "help", id: `${id}-help` }, help) : null, error);
}

function uploadInto(textarea, accept) {
  const input = h("input", { type: "file", accept, class: "upload", "aria-label": `Upload a file into ${textarea.id}`,
    onchange: async () => { if (input.files[0]) textarea.value = await input.files[0].text(); } });
  return h("div", { class: "row" }, h("span", { class: "muted" }, "or upload a file:"), input);
}

function paramControls(params, prefix) {
  const names = Object.keys(params || {}).sort();
  if (!names.length) return null;
  return h("details", { class: "params" }, h("summary", {}, "Parameters"), names.map(name => {
    const p = params[name], id = `${prefix}-param-${name}`;
    const range = p.min !== undefined && p.max !== undefined ? ` Range ${p.min}–${p.max}${p.not_above ? `, not above ${p.not_above}` : ""}.` : "";
    const def = p.default === null || p.default === undefined ? " Default: the model's own." : ` Default: ${fmtValue(p.default)}.`;
    const help = `${p.description || ""}${range}${def}`;
    let control;
    if (p.type === "boolean") {
      control = h("input", { type: "checkbox", "data-param": name, checked: p.default === true });
      control.id = id;
      const error = h("p", { class: "field-error", id: `${id}-error`, role: "alert" });
      control.setAttribute("aria-describedby", `${id}-error ${id}-help`);
      return h("div", { class: "field", "data-fields": `params.${name}` },
        h("div", { class: "check" }, control, h("label", { for: id, style: "margin:0" }, name)),
        h("p", { class: "help", id: `${id}-help` }, help), error);
    }
    if (p.enum) {
      control = h("select", { "data-param": name }, p.enum.map(v => h("option", { value: v, selected: v === p.default }, String(v))));
    } else {
      control = h("input", { type: p.type === "integer" || p.type === "number" ? "number" : "text", "data-param": name,
        min: p.min, max: p.max, step: p.type === "integer" ? 1 : "any", inputmode: p.type === "integer" ? "numeric" : undefined,
        value: p.default ?? "", placeholder: p.default === null ? "model default" : undefined });
    }
    return field(id, name, control, { help, fields: [`params.${name}`] });
  }));
}

// paramValues reads the params that differ from their defaults.
function paramValues(form, params) {
  const out = {};
  for (const el of form.querySelectorAll("[data-param]")) {
    const name = el.dataset.param, p = params[name];
    let v;
    if (p.type === "boolean") v = el.checked;
    else if (el.value.trim() === "") continue;
    else if (p.type === "integer" || p.type === "number") v = Number(el.value);
    else v = el.value;
    if (v !== p.default) out[name] = v;
  }
  return out;
}

function modelOption(m) {
  return h("option", { value: m.id }, m.available ? `${m.name} (${m.id})` : `${m.name} (${m.id}) — unavailable`);
}

// availabilityNote says why a model cannot run, in the server's words ("the boltz command
// is not installed"): no retry would help until the operator sets a worker up for it, so
// the form does not offer to submit (see submitForm).
function availabilityNote(m) {
  return m && !m.available
    ? h("p", { class: "note", id: "unavailable" }, `${m.name} cannot run on this server: ${m.unavailable_reason || "no worker can run it"}. `,
      "Submitting is off until a worker that can run it connects; its operator can run chaperone doctor on the worker to see what it needs.")
    : null;
}

async function submitForm(cat, kind, area) {
  const spec = KINDS.find(k => k.kind === kind);
  const form = h("form", { novalidate: true });
  const alert = h("div", { class: "alert", role: "alert" });
  const name = h("input", { type: "text", maxlength: cat.limits.name_chars, placeholder: "optional label" });
  const submit = h("button", { type: "submit", "aria-describedby": "unavailable" }, "Submit");
  let current, readBody, paramsOf;
  const body = h("div");
  // offer allows a submit only for a model that a worker can run now.
  const offer = model => { submit.disabled = !model?.available; };

  if (kind === "design") {
    const protocol = h("select", {}, cat.protocols.map(p => h("option", { value: p.id }, `${p.id} — ${p.description}`)));
    const paint = () => {
      current = cat.protocols.find(p => p.id === protocol.value);
      const model = cat.models.find(m => m.id === current.model);
      offer(model);
      const parts = [availabilityNote(model)];
      const specBox = h("textarea", { spellcheck: "false", placeholder: "entities:\n  - protein: ..." });
      const structure = h("textarea", { spellcheck: "false", placeholder: "PDB or mmCIF text of the target" });
      const contig = h("input", { type: "text", spellcheck: "false", placeholder: "A1-80,70-100" });
      if (current.requires.includes("spec")) {
        parts.push(field("design-spec", "Design spec (YAML)", specBox, { fields: ["spec"], help: "The target and what to design against it, as a BoltzGen design spec." }), uploadInto(specBox, ".yaml,.yml"));
      }
      if (current.requires.includes("structure")) {
        parts.push(field("design-structure", "Target structure (PDB or mmCIF)", structure, { fields: ["structure"], help: `At most ${cat.limits.structure_chars.toLocaleString()} characters.` }), uploadInto(structure, ".pdb,.cif,.mmcif"));
      }
      if (current.requires.includes("contig")) {
        parts.push(field("design-contig", "Contig", contig, { fields: ["contig"], help: "Comma-separated segments: A1-80 keeps chain A residues 1–80 fixed; 70-100 designs a segment of 70 to 100 residues." }));
      }
      parts.push(paramControls(current.params, "design"));
      body.replaceChildren(...parts.filter(Boolean));
      readBody = () => {
        const b = { protocol: current.id };
        if (current.requires.includes("spec")) b.spec = specBox.value;
        if (current.requires.includes("structure")) b.structure = structure.value;
        if (current.requires.includes("contig")) b.contig = contig.value.trim();
        return b;
      };
      paramsOf = () => current.params;
    };
    protocol.addEventListener("change", paint);
    form.append(field("design-protocol", "Protocol", protocol, { fields: ["protocol", "model"] }));
    paint();
  } else {
    const models = cat.models.filter(m => m.kind === kind);
    const select = h("select", {}, models.map(modelOption));
    const preferred = models.find(m => m.available) ?? models[0];
    select.value = preferred.id;
    const input = h("textarea", { spellcheck: "false", placeholder: kind === "predict"
      ? ">A|protein\nMKTAYIAKQRQISFVKSHFSRQ…\n\nA bare sequence, FASTA, or Boltz YAML"
      : ">seq1\nMKTAYIAKQRQISFVKSHFSRQ…\n>seq2\n…\n\nOne sequence, or FASTA with up to " + cat.limits.embed_sequences_per_job });
    const paint = () => {
      current = models.find(m => m.id === select.value);
      offer(current);
      const limit = kind === "predict" ? `Up to ${current.max_residues} residues per structure.` : `Up to ${cat.limits.embed_residues_per_sequence} residues per sequence.`;
      body.replaceChildren(...[availabilityNote(current),
        field(`${kind}-input`, kind === "predict" ? "Sequence, FASTA or YAML" : "Sequences", input,
          { fields: kind === "predict" ? ["sequence", "input", "targets"] : ["sequence", "sequences", "input"], help: limit }),
        uploadInto(input, ".fasta,.fa,.faa,.yaml,.yml,.txt"), paramControls(current.params, kind)].filter(Boolean));
    };
    select.addEventListener("change", paint);
    form.append(field(`${kind}-model`, "Model", select, { fields: ["model"] }));
    paint();
    readBody = () => ({ model: current.id, ...sequenceFields(kind, input.value) });
    paramsOf = () => current.params;
  }

  form.append(body, field(`${kind}-name`, "Name", name, { fields: ["name"] }), alert,
    h("div", { class: "row" }, submit));
  form.addEventListener("submit", async ev => {
    ev.preventDefault();
    if (submit.disabled) return;
    clearErrors(form);
    const button = submit;
    button.disabled = true;
    try {
      const req = { ...readBody(), params: paramValues(form, paramsOf() || {}) };
      if (name.value.trim()) req.name = name.value.trim();
      const r = await api(spec.path, { method: "POST", body: req });
      if (r.status === 202) { location.hash = `#/job/${r.data.id}`; return; }
      showProblem(form, alert, r);
    } catch (err) {
      alert.textContent = `The server could not be reached: ${err.message}`;
    } finally {
      button.disabled = false;
    }
  });
  area.replaceChildren(form);
}

// sequenceFields turns what was pasted into the request's input fields: FASTA starts with
// '>', YAML has keys; anything else is taken for bare sequences, one per line.
function sequenceFields(kind, text) {
  const t = text.trim();
  const formatted = t.startsWith(">") || t.includes(":");
  if (kind === "predict") return formatted ? { input: text } : { sequence: t.replace(/\s+/g, "") };
  if (formatted) return { input: text };
  const lines = t.split(/\n+/).map(s => s.trim()).filter(Boolean);
  return lines.length > 1 ? { sequences: lines } : { sequence: t.replace(/\s+/g, "") };
}

function clearErrors(form) {
  for (const e of form.querySelectorAll(".field-error")) e.textContent = "";
  for (const e of form.querySelectorAll("[aria-invalid]")) e.removeAttribute("aria-invalid");
}

// showProblem puts a 400's detail next to the field it names ("params.fast: must be …"),
// else above the submit button, with Retry-After for 429 and 503.
function showProblem(form, alert, r) {
  const detail = r.data?.detail || `The server answered ${r.status}.`;
  if (r.status === 400) {
    const named = /^([A-Za-z_][\w.]*)(\[\d+\])?[\w.[\]]*:/.exec(detail);
    const target = named && [...form.querySelectorAll("[data-fields]")].find(f => f.dataset.fields.split(" ").includes(named[1]));
    if (target) {
      target.querySelector(".field-error").textContent = detail;
      const control = target.querySelector("input,select,textarea");
      control.setAttribute("aria-invalid", "true");
      target.closest("details")?.setAttribute("open", "");
      control.focus();
      return;
    }
  }
  // A 429's wait is real: the quota frees up. A 503's Retry-After (5 minutes for a model no
  // worker offers) is for programs; a person is told what the detail says is missing.
  const retry = r.status === 429 && r.res.headers.get("Retry-After");
  alert.textContent = detail + (retry ? ` Try again in ${fmtDuration(Number(retry) * 1000)}.` : "");
}

// ---- the job list ----

// jobsTable lists jobs in three columns, so that it fits a phone: the job (its title, and
// its model under it), its status with its progress, and when it was created.
function jobsTable(jobs) {
  if (!jobs.length) {
    return h("div", { class: "empty" }, h("p", {}, "No jobs yet. Jobs you submit from this browser appear here."),
      h("p", {}, "A job belongs to whoever sent it: one sent with an API key belongs to that key, and one sent without a key ",
        "(curl, a script) to the address it came from, not to this browser. To see a key's jobs here, paste the key under ",
        h("b", {}, "API key"), " at the top of the page; chaperone jobs list shows the jobs of your address."));
  }
  const columns = [
    { key: "name", label: "Job", render: j => [h("a", { href: `#/job/${j.id}` }, jobTitle(j)),
      h("span", { class: "sub" }, j.model ?? j.protocol ?? "")] },
    { key: "status", label: "Status", render: j => [pill(j.status), progressBar(j)] },
    { key: "created_at", label: "Created", render: j => fmtWhen(j.created_at) },
  ];
  return sortableTable(columns, jobs, { label: "Your jobs" });
}

// watchJobs keeps the list current: it lists, then holds on the oldest active job with
// Prefer: wait (one connection, not one per job) and lists again when that hold ends.
async function watchJobs(box, signal) {
  while (!signal.aborted) {
    let r;
    try {
      r = await api("/v1/jobs?limit=50", { signal });
    } catch {
      if (signal.aborted) return;
      await sleep(LIST_WAIT * 1000, signal);
      continue;
    }
    if (r.status === 401) { box.replaceChildren(h("div", { class: "alert" }, "The API key was not accepted. Forget it or paste another.")); return; }
    const jobs = r.data?.data ?? [];
    box.replaceChildren(jobsTable(jobs));
    const active = jobs.filter(j => !TERMINAL.has(j.status));
    if (!active.length) { await sleep(LIST_WAIT * 1000, signal); continue; }
    const oldest = active[active.length - 1];
    try {
      await api(`/v1/jobs/${oldest.id}`, { headers: { Prefer: `wait=${LIST_WAIT}` }, signal });
    } catch {
      if (signal.aborted) return;
    }
  }
}

// ---- pages ----

async function homePage(signal, withForm) {
  const jobsBox = h("div", {}, h("p", { class: "muted" }, "Loading jobs…"));
  const jobsCard = h("section", { class: "card", "aria-labelledby": "jobs-title" }, h("h2", { id: "jobs-title" }, "Your jobs"), jobsBox);
  if (!withForm) {
    main.replaceChildren(jobsCard);
  } else {
    const cat = await catalog();
    const area = h("div", { role: "tabpanel" });
    const tabs = h("div", { class: "tabs", role: "tablist" }, KINDS.map(k => h("button", {
      type: "button", role: "tab", id: `tab-${k.kind}`, "aria-selected": "false",
      onclick: () => select(k.kind),
      onkeydown: ev => {
        const i = KINDS.indexOf(k), next = ev.key === "ArrowRight" ? i + 1 : ev.key === "ArrowLeft" ? i - 1 : null;
        if (next !== null) { const n = KINDS[(next + KINDS.length) % KINDS.length]; select(n.kind); document.getElementById(`tab-${n.kind}`).focus(); }
      },
    }, k.label)));
    const select = kind => {
      for (const b of tabs.children) {
        b.setAttribute("aria-selected", String(b.id === `tab-${kind}`));
        b.tabIndex = b.id === `tab-${kind}` ? 0 : -1; // one tab stop; arrows move between tabs
      }
      area.setAttribute("aria-labelledby", `tab-${kind}`);
      sessionStorage.setItem("chaperone.tab", kind);
      submitForm(cat, kind, area);
    };
    main.replaceChildren(h("div", { class: "grid" },
      h("section", { class: "card", "aria-labelledby": "new-title" }, h("h2", { id: "new-title" }, "New job"), tabs, area),
      jobsCard));
    select(sessionStorage.getItem("chaperone.tab") || "predict");
  }
  await watchJobs(jobsBox, signal);
}

async function jobPage(id, signal) {
  const head = h("section", { class: "card" }, h("p", { class: "muted" }, "Loading…"));
  const logBox = h("pre", { class: "log", id: "log", tabindex: 0, "aria-label": "Run log" });
  const logCard = h("section", { class: "card" }, h("h2", {}, "Run log"), logBox);
  const results = h("div");
  main.replaceChildren(head, results, logCard);

  const log = { offset: 0, decoder: new TextDecoder() };
  let job, clock, shown = false;
  signal.addEventListener("abort", () => clearInterval(clock));
  let wait = 0;
  while (!signal.aborted) {
    let r;
    try {
      r = await api(`/v1/jobs/${id}`, { headers: wait ? { Prefer: `wait=${wait}` } : {}, signal });
    } catch {
      if (signal.aborted) return;
      await sleep(JOB_WAIT * 1000, signal);
      continue;
    }
    if (r.status !== 200) {
      head.replaceChildren(...(r.status === 404
        ? [h("h1", {}, "Job not found"), h("p", {}, "It was deleted, expired, or belongs to another session or key. ", h("a", { href: "#/" }, "Back to your jobs"))]
        : [h("h1", {}, "This job cannot be shown"), h("div", { class: "alert" }, r.data?.detail ?? `The server answered ${r.status}.`)]));
      results.replaceChildren(); logCard.remove();
      return;
    }
    job = r.data;
    clearInterval(clock);
    // The head is drawn anew on every answer; a keyboard user keeps the button they were on.
    const focused = head.contains(document.activeElement) ? document.activeElement.id : "";
    renderJobHead(head, job, signal);
    if (focused) document.getElementById(focused)?.focus();
    if (!TERMINAL.has(job.status)) clock = setInterval(() => renderElapsed(head, job), 1000);
    await followLog(job, log, logBox, signal);
    if (TERMINAL.has(job.status)) {
      if (!shown && job.results_ready) { shown = true; await showResults(job, results, signal); }
      return;
    }
    wait = JOB_WAIT;
  }
}

function renderElapsed(head, job) {
  const e = head.querySelector("[data-elapsed]");
  if (!e) return;
  const start = Date.parse(job.started_at || job.created_at);
  const end = job.finished_at ? Date.parse(job.finished_at) : Date.now();
  e.textContent = fmtDuration(end - start);
}

// waitingFor says why a job that has no stage yet waits, from its queue object: no worker
// for its model, every slot busy, a cluster scheduler (Slurm) holding it, or its
// alignments being searched ahead of the workers.
function waitingFor(job) {
  const q = job.queue;
  if (!q) return "starting";
  const why = {
    no_worker: "waiting: no worker that can run it is connected",
    busy: `waiting: ${q.chips_busy === 1 ? "the one worker slot" : `all ${q.chips_busy} worker slots`} that can run it ${q.chips_busy === 1 ? "is" : "are"} busy`,
    scheduler: "waiting in the cluster's scheduler (Slurm)",
    aligning: job.stage === "msa" ? "searching its alignments" : "waiting for its alignments to be searched",
  }[q.reason] ?? `waiting (${q.reason})`;
  const ahead = q.accounts_ahead;
  return ahead ? `${why}; ${ahead} other ${ahead === 1 ? "owner's jobs go" : "owners' jobs go"} first` : why;
}

function renderJobHead(head, job, signal) {
  const actions = h("div", { class: "row" });
  if (!TERMINAL.has(job.status)) {
    actions.append(h("button", { type: "button", class: "quiet", id: "cancel", onclick: async ev => {
      ev.target.disabled = true;
      await api(`/v1/jobs/${job.id}/cancel`, { method: "POST", signal });
    } }, "Cancel job"));
  }
  if (job.results_ready) actions.append(downloadLink(job.links.archive, "Download all (zip)", "button quiet"));
  const del = h("button", { type: "button", class: "danger", id: "delete", onclick: async () => {
    if (del.dataset.armed !== "yes") { del.dataset.armed = "yes"; del.textContent = "Delete for good?"; return; }
    const r = await api(`/v1/jobs/${job.id}`, { method: "DELETE" });
    if (r.ok) location.hash = "#/";
  } }, "Delete job");
  actions.append(del);
  const kindLabel = KIND_LABELS[job.kind];
  head.replaceChildren(...[
    h("h1", {}, jobTitle(job)),
    h("div", { class: "meta" },
      pill(job.status), h("span", {}, kindLabel), h("span", {}, h("b", {}, job.model ?? job.protocol ?? "")),
      h("span", {}, "id ", h("code", {}, job.id))),
    h("div", { class: "meta" },
      h("span", {}, "Stage: ", h("b", { "data-stage": true }, TERMINAL.has(job.status) ? "finished" : job.stage ?? waitingFor(job))),
      job.total ? h("span", {}, `${job.done} of ${job.total} done`) : null,
      h("span", {}, "Elapsed: ", h("b", { "data-elapsed": true }, "—")),
      h("span", {}, "Created ", fmtTime(job.created_at))),
    progressBar(job),
    job.error ? h("div", { class: "alert" }, job.error) : null,
    actions].filter(Boolean));
  renderElapsed(head, job);
}

// followLog reads what the log gained since the last read. Its Range starts one byte
// early, at a byte already shown, so that it is satisfiable even when nothing was added
// (an unsatisfiable range is a 416, which the browser reports as a failed load).
async function followLog(job, log, box, signal) {
  let res;
  try {
    res = await fetch(job.links.logs, { signal, headers: {
      ...(log.offset ? { Range: `bytes=${log.offset - 1}-` } : {}),
      ...(sessionStorage.getItem(KEY) ? { "X-API-Key": sessionStorage.getItem(KEY) } : {}),
    } });
  } catch {
    return;
  }
  if (res.status !== 200 && res.status !== 206) return;
  let bytes = new Uint8Array(await res.arrayBuffer());
  const atBottom = box.scrollTop + box.clientHeight >= box.scrollHeight - 4;
  if (res.status === 200) { box.textContent = ""; log.offset = 0; log.decoder = new TextDecoder(); }
  else bytes = bytes.subarray(1);
  box.textContent += log.decoder.decode(bytes, { stream: true });
  log.offset += bytes.length;
  if (atBottom) box.scrollTop = box.scrollHeight;
}

// ---- results ----

async function showResults(job, box, signal) {
  const r = await api(job.links.results, { signal });
  if (!r.ok || !r.data.ready) return;
  const res = r.data;
  const parts = [];
  if (res.kind === "predict") parts.push(...predictionResults(res, signal));
  if (res.kind === "design") parts.push(...designResults(res, signal));
  if (res.kind === "embed") parts.push(embeddingResults(res, signal));
  parts.push(downloadsCard(res));
  box.replaceChildren(...parts);
}

function downloadsCard(res) {
  return h("section", { class: "card" }, h("h2", {}, "Downloads"),
    h("p", {}, downloadLink(res.archive_url, "Everything as one zip")),
    h("ul", { class: "downloads" }, res.artifacts.map(a => h("li", {}, downloadLink(a.url, a.path), h("span", { class: "muted" }, ` ${a.type}`)))));
}

const sampleOf = (path, pattern) => Number((pattern.exec(path) || [])[1] ?? 0);

function formatOf(path) { return /\.pdb$/i.test(path) ? "pdb" : "mmcif"; }

// structureView is the viewer card: Mol* coloured by pLDDT with its legend, a sample
// picker, and (for predictions) the PAE heatmap of the sample shown.
function structureView(signal) {
  const title = h("h2", {}, "Structure");
  const picker = h("div", { class: "row", role: "group", "aria-label": "Samples" });
  const status = h("p", { class: "muted", role: "status" });
  const element = h("div", { id: "viewer" });
  const paeCanvas = h("canvas", { class: "pae", id: "pae", role: "img", "aria-label": "Predicted aligned error heatmap" });
  const paeBox = h("div", {}, h("h3", {}, "Predicted aligned error"), paeCanvas,
    h("div", { class: "scale", "aria-hidden": "true" }, "0 Å", h("i"), "30 Å"),
    h("p", { class: "help" }, "Expected position error (Å) of residue x (column) when aligned on residue y (row). Dark is confident."));
  paeBox.hidden = true;
  const legend = h("div", { class: "legend", "aria-label": "pLDDT colours" },
    h("b", {}, "pLDDT"), PLDDT_BANDS.map(b => h("span", { style: `--c:#${b.colour.toString(16).padStart(6, "0")}` }, b.label)));
  const viewer = new Viewer(element);
  const wrap = h("div", { class: "viewer-wrap" }, h("div", {}, element, legend, status), paeBox);
  const card = h("section", { class: "card" }, title, picker, wrap);

  async function show(label, structure, pae) {
    title.textContent = `Structure: ${label}`;
    status.textContent = "Loading the structure…";
    try {
      const text = await (await download(structure.url, signal)).text();
      await viewer.show(text, formatOf(structure.path));
      status.textContent = `Showing ${structure.path}.`;
      element.dataset.loaded = structure.path;
    } catch (err) {
      status.textContent = `The viewer could not show ${structure.path}: ${err.message}`;
    }
    paeBox.hidden = !pae;
    wrap.classList.toggle("single", !pae);
    if (pae) {
      try {
        const arrays = await readNPZ(await (await download(pae.url, signal)).arrayBuffer());
        const matrix = arrays.get("pae") ?? [...arrays.values()].find(a => a.shape.length === 2);
        drawPAE(paeCanvas, matrix);
        paeCanvas.dataset.drawn = pae.path;
      } catch (err) {
        paeBox.replaceChildren(h("p", { class: "alert" }, `The PAE file could not be read: ${err.message}`));
      }
    }
  }

  function choose(label, samples) {
    picker.replaceChildren(...(samples.length > 1 ? [h("span", { class: "muted" }, "Sample:"), ...samples.map((s, i) => h("button", {
      type: "button", class: i === 0 ? undefined : "quiet", "aria-pressed": String(i === 0),
      onclick: ev => {
        for (const b of picker.querySelectorAll("button")) { b.className = "quiet"; b.setAttribute("aria-pressed", "false"); }
        ev.target.className = ""; ev.target.setAttribute("aria-pressed", "true");
        show(`${label}, sample ${s.index + 1}`, s.structure, s.pae);
      },
    }, s.index === 0 ? "best" : String(s.index + 1)))] : []));
    if (samples.length) show(samples.length > 1 ? `${label}, best sample` : label, samples[0].structure, samples[0].pae);
  }
  return { card, choose };
}

function predictionResults(res, signal) {
  const view = structureView(signal);
  const samplesOf = target => {
    const structures = res.artifacts.filter(a => a.target === target && a.type === "structure")
      .map(a => ({ index: sampleOf(a.path, /_sample_(\d+)\./), structure: a })).sort((a, b) => a.index - b.index);
    const paes = res.artifacts.filter(a => a.target === target && a.type === "pae");
    for (const s of structures) s.pae = paes.find(p => sampleOf(p.path, /_model_(\d+)\./) === s.index) ?? (s.index === 0 ? paes[0] : undefined);
    return structures;
  };
  const rows = res.rows.map(r => ({ ...r }));
  const keys = [...new Set(rows.flatMap(r => Object.keys(r)))];
  const numeric = k => rows.some(r => typeof r[k] === "number");
  const order = ["id", "status", "plddt", "complex_plddt", "ptm", "iptm", "confidence_score"];
  keys.sort((a, b) => (order.indexOf(a) + 1 || 99) - (order.indexOf(b) + 1 || 99));
  const columns = keys.map(k => ({ key: k, label: k, num: numeric(k), render: k === "status" ? r => h("span", { class: `pill ${r.status === "ok" ? "succeeded" : "failed"}` }, r.status) : undefined }));
  const score = r => r.confidence_score ?? r.iptm ?? r.complex_plddt ?? r.plddt ?? -1;
  const best = rows.filter(r => r.status === "ok").sort((a, b) => score(b) - score(a))[0] ?? rows[0];
  const table = sortableTable(columns, rows, { label: "Prediction rows", rowKey: r => r.id, selected: best?.id,
    onSelect: r => view.choose(r.id, samplesOf(r.id)) });
  if (best) view.choose(best.id, samplesOf(best.id));
  return [view.card, h("section", { class: "card" }, h("h2", {}, "Targets"),
    h("p", { class: "help" }, "Select a row to show its structure. Read iptm above 0.5 as a likely interface, complex_plddt above 0.7 as a likely fold."), table)];
}

function designResults(res, signal) {
  const view = structureView(signal);
  const designs = [...res.designs].sort((a, b) => (a.rank ?? Infinity) - (b.rank ?? Infinity))
    .map(d => ({ ...d, ...Object.fromEntries(Object.entries(d.metrics || {}).map(([k, v]) => [`metric:${k}`, v])) }));
  const metricKeys = [...new Set(designs.flatMap(d => Object.keys(d).filter(k => k.startsWith("metric:"))))];
  const fileOf = d => res.artifacts.find(a => a.path === d.file);
  const columns = [
    { key: "rank", label: "Rank", num: true }, { key: "id", label: "Design" },
    { key: "sequence", label: "Sequence", render: d => h("code", { title: d.sequence }, d.sequence.length > 24 ? d.sequence.slice(0, 24) + "…" : d.sequence) },
    ...metricKeys.map(k => ({ key: k, label: k.slice(7), num: true })),
  ];
  const open = d => { const f = fileOf(d); if (f) view.choose(d.id, [{ index: 0, structure: f }]); };
  const table = sortableTable(columns, designs, { label: "Designs", rowKey: d => d.id, selected: designs[0]?.id, onSelect: open });
  if (designs[0]) open(designs[0]);
  return [view.card, h("section", { class: "card" }, h("h2", {}, "Designs"),
    h("p", { class: "help" }, res.designs.some(d => d.rank !== null) ? "Ranked by predicted confidence. Select a design to view it." : "Unranked. Select a design to view it."), table)];
}

function embeddingResults(res, signal) {
  const plot = h("div", { id: "pca" }, h("p", { class: "muted" }, "Computing the projection…"));
  const table = sortableTable([
    { key: "id", label: "Sequence" }, { key: "length", label: "Length", num: true },
    { key: "file", label: "File", render: s => { const a = res.artifacts.find(x => x.path === s.file); return a ? downloadLink(a.url, s.file) : s.file; } },
  ], res.sequences, { label: "Embedded sequences" });
  const card = h("section", { class: "card" }, h("h2", {}, `Embeddings: ${res.model}`),
    h("div", { class: "meta" }, h("span", {}, "Pooling ", h("b", {}, res.pool)), h("span", {}, "Dimensions ", h("b", {}, String(res.d_model))), h("span", {}, "Format ", h("b", {}, res.format))),
    table, h("h3", {}, "Pooled vectors, first two principal components"), plot);
  projectEmbeddings(res, plot, signal);
  return card;
}

async function projectEmbeddings(res, plot, signal) {
  if (res.format !== "npz") { plot.replaceChildren(h("p", { class: "muted" }, "The projection is drawn from npz files; this job wrote " + res.format + ".")); return; }
  if (res.sequences.length < 2) { plot.replaceChildren(h("p", { class: "muted" }, "A projection needs at least two sequences.")); return; }
  try {
    const vectors = [];
    for (const s of res.sequences) {
      const a = res.artifacts.find(x => x.path === s.file);
      const arrays = await readNPZ(await (await download(a.url, signal)).arrayBuffer());
      const pooled = arrays.get("pooled");
      if (!pooled) throw new Error(`${s.file} has no pooled array`);
      vectors.push(pooled.data);
    }
    plot.replaceChildren(scatter(res.sequences.map(s => s.id), pca(vectors)));
  } catch (err) {
    plot.replaceChildren(h("p", { class: "alert" }, `The projection could not be drawn: ${err.message}`));
  }
}

// ---- routing ----

let pageAbort;

async function route() {
  pageAbort?.abort();
  pageAbort = new AbortController();
  const signal = pageAbort.signal;
  const hash = location.hash || "#/";
  for (const a of document.querySelectorAll(".top nav a")) {
    if (a.getAttribute("href") === hash) a.setAttribute("aria-current", "page");
    else a.removeAttribute("aria-current");
  }
  const job = /^#\/job\/([\w-]+)$/.exec(hash);
  try {
    if (job) await jobPage(job[1], signal);
    else await homePage(signal, hash !== "#/jobs");
  } catch (err) {
    if (!signal.aborted) main.replaceChildren(h("div", { class: "alert" }, `Something went wrong: ${err.message}`));
  }
}

window.addEventListener("hashchange", () => { route(); main.focus({ preventScroll: true }); });
setupKeyPanel();
route();
