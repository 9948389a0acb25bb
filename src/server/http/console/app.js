// The tributary web console: a client of the reference server's v2 API, in the browser.
//
// It reads and changes everything through `/v2/...` with the key the user signed in with, so
// it sees exactly what that key may see. The key is kept in sessionStorage (gone when the tab
// closes), sent as the `x-api-key` header, and never put in a URL or written to the console.
// No build step: Preact with hooks and htm come as one ES module from the server
// (`/console/vendor/preact-htm.js`, the `htm` package's standalone build). Routes live in the
// URL's hash (`#/datasets/12`), which the browser never sends to the server.
import { html, render, useEffect, useMemo, useRef, useState } from "./vendor/preact-htm.js"

const keySlot = "tributary.console.apiKey"
const pageSize = 25
const pollMillis = 2000
const batchSize = 100
const chartMinutes = 5
const chartBucketSeconds = 10

// ---------------------------------------------------------------------------------------------
// The API

/** An answer that was not 2xx, with what the server said. */
class ApiError extends Error {
  constructor(status, body, requestId, message) {
    const first = body && Array.isArray(body.errors) ? body.errors[0] : undefined
    super(message ?? first?.message ?? `HTTP ${status}`)
    this.status = status
    this.code = first?.code ?? null
    this.field = first?.field ?? null
    this.requestId = requestId ?? body?.requestId ?? null
  }
}

/** Told of `x-tributary-faults` on every answer: the faults the server injects, if any. */
let onFaults = () => {}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

/** A random UUID (v4) without `crypto.randomUUID`, which plain-HTTP pages off loopback lack. */
const uuid = () => {
  const b = crypto.getRandomValues(new Uint8Array(16))
  b[6] = (b[6] & 0x0f) | 0x40
  b[8] = (b[8] & 0x3f) | 0x80
  const h = [...b].map((x) => x.toString(16).padStart(2, "0")).join("")
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/**
 * One API call with the session's key. 429 and 503 (what `--faults` injects, or a busy server)
 * and a lost connection are tried again, up to 4 times; a POST only with an `Idempotency-Key`,
 * so that a retried one is not run twice.
 */
async function api(path, { method = "GET", body, idempotencyKey, key } = {}) {
  const headers = { "x-api-key": key ?? sessionStorage.getItem(keySlot) ?? "" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey
  const retriable = method === "GET" || idempotencyKey !== undefined
  for (let attempt = 1;; attempt++) {
    let response
    try {
      response = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body), cache: "no-store" })
    } catch (error) {
      if (retriable && attempt < 4) {
        await sleep(250 * attempt)
        continue
      }
      throw new ApiError(0, null, null, `the server did not answer (${error.message})`)
    }
    onFaults(response.headers.get("x-tributary-faults"))
    const text = await response.text()
    let json = null
    try {
      json = text === "" ? null : JSON.parse(text)
    } catch {
      json = null
    }
    if (response.ok) return json
    if (retriable && attempt < 4 && (response.status === 429 || response.status === 503)) {
      const after = Number(response.headers.get("retry-after") ?? "0")
      await sleep(Math.min(after > 0 ? after * 1000 : 250 * attempt, 3000))
      continue
    }
    throw new ApiError(response.status, json, response.headers.get("x-request-id"))
  }
}

const query = (params) => {
  const entries = Object.entries(params).filter(([, v]) => v !== undefined && v !== null && v !== "")
  return entries.length === 0 ? "" : "?" + new URLSearchParams(entries.map(([k, v]) => [k, String(v)])).toString()
}

// ---------------------------------------------------------------------------------------------
// Small hooks

/** `path`'s `data` (undefined until it arrives; kept while the next one loads), its error. */
function useApi(path, refresh = 0) {
  const [state, setState] = useState({ data: undefined, error: undefined, path: undefined })
  useEffect(() => {
    if (path === null) return
    let live = true
    api(path).then(
      (answer) => live && setState({ data: answer?.data, error: undefined, path }),
      (error) => live && setState((s) => ({ data: s.path === path ? s.data : undefined, error, path }))
    )
    return () => {
      live = false
    }
  }, [path, refresh])
  return state
}

/** A number that goes up every `ms` while the page is shown: polling. */
function useTick(ms) {
  const [tick, setTick] = useState(0)
  useEffect(() => {
    const timer = setInterval(() => setTick((t) => t + 1), ms)
    return () => clearInterval(timer)
  }, [ms])
  return tick
}

function useDebounced(value, ms) {
  const [settled, setSettled] = useState(value)
  useEffect(() => {
    const timer = setTimeout(() => setSettled(value), ms)
    return () => clearTimeout(timer)
  }, [value, ms])
  return settled
}

function useRoute() {
  const [hash, setHash] = useState(location.hash)
  useEffect(() => {
    const changed = () => setHash(location.hash)
    addEventListener("hashchange", changed)
    return () => removeEventListener("hashchange", changed)
  }, [])
  const parts = hash.replace(/^#\/?/, "").split("/").filter((p) => p !== "")
  if (parts[0] === "data-sources" && /^\d+$/.test(parts[1] ?? "")) return { page: "dataSource", id: Number(parts[1]) }
  if (parts[0] === "datasets" && /^\d+$/.test(parts[1] ?? "")) return { page: "dataset", id: Number(parts[1]) }
  return { page: "organization" }
}

const go = (hash) => {
  location.hash = hash
}

// ---------------------------------------------------------------------------------------------
// Showing values

const when = (iso) => (iso ? iso.slice(0, 19).replace("T", " ") + " UTC" : "—")
const duration = (ms) => (ms === null || ms === undefined ? "—" : ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`)
const count = (n) => (n === null || n === undefined ? "—" : n.toLocaleString("en"))
const cell = (value) =>
  value === null || value === undefined
    ? html`<span class="null">null</span>`
    : Array.isArray(value)
    ? value.join(", ")
    : typeof value === "object"
    ? JSON.stringify(value)
    : String(value)

const roleRules = {
  admin: "admin keys may do everything",
  editor: "editor keys may create and change data sources, datasets and ingestions, not organization settings",
  viewer: "viewer keys may only read"
}

/** What went wrong, said so that the user knows what to do. */
function Problem({ error, profile }) {
  if (!error) return null
  const detail = html`<div class="detail">
    The API said: <q>${error.message}</q>${error.code ? html` (code <code>${error.code}</code>${error.field ? html`, field <code>${error.field}</code>` : ""})` : ""}${
    error.requestId ? html`, request <code>${error.requestId}</code>` : ""
  }.
  </div>`
  if (error.status === 403) {
    const role = profile?.role
    return html`<div class="problem forbidden" role="alert" data-testid="forbidden">
      <strong>Not allowed (403 Forbidden).</strong> The key you signed in with${role ? html` belongs to <b>${profile.name}</b>, a <b>${role}</b>` : ""}; ${
      roleRules[role] ?? "it lacks the permission this needs"
    }. Nothing was changed. Sign in with a key that has the permission, or ask an admin of the organization.
      ${detail}
    </div>`
  }
  const head = error.status === 401
    ? "The key was refused (401): it is missing, wrong, or no longer valid. Sign in again."
    : error.status === 404
    ? "Not found (404): it does not exist, or this key may not see it."
    : error.status === 0
    ? "The server did not answer."
    : `The request failed (${error.status}).`
  return html`<div class="problem" role="alert" data-testid="problem"><strong>${head}</strong>${detail}</div>`
}

// ---------------------------------------------------------------------------------------------
// Confirmation

/**
 * The dialog every change goes through: says what will happen, runs it on "Confirm", shows a
 * refusal (a 403 explained) in place. `ask.run` returns what to do after (e.g. navigate).
 */
function Confirm({ ask, close, profile }) {
  const [state, setState] = useState({ running: false, error: undefined })
  if (!ask) return null
  const confirm = async () => {
    setState({ running: true, error: undefined })
    try {
      const then = await ask.run()
      close()
      if (typeof then === "function") then()
    } catch (error) {
      setState({ running: false, error })
    }
  }
  return html`<div class="overlay">
    <div class="dialog" role="dialog" aria-modal="true" data-testid="confirm">
      <h3>${ask.title}</h3>
      <div class="dialog-body">${ask.body}</div>
      <${Problem} error=${state.error} profile=${profile} />
      <div class="buttons">
        <button type="button" onClick=${() => {
    setState({ running: false, error: undefined })
    close()
  }}>${state.error ? "Close" : "Cancel"}</button>
        ${state.error ? null : html`<button type="button" class=${ask.danger ? "danger" : "primary"} disabled=${state.running} onClick=${confirm} data-testid="confirm-button">
          ${state.running ? "Working…" : ask.confirmLabel ?? "Confirm"}
        </button>`}
      </div>
    </div>
  </div>`
}

// ---------------------------------------------------------------------------------------------
// Sign-in

function SignIn({ signedIn }) {
  const [key, setKey] = useState("")
  const [error, setError] = useState(undefined)
  const [busy, setBusy] = useState(false)
  const submit = async (event) => {
    event.preventDefault()
    setBusy(true)
    setError(undefined)
    try {
      await api("/v2/auth/validate-key", { key })
      sessionStorage.setItem(keySlot, key)
      signedIn()
    } catch (e) {
      setError(e)
    } finally {
      setBusy(false)
    }
  }
  return html`<main class="signin">
    <form onSubmit=${submit} data-testid="signin">
      <h1>tributary console</h1>
      <p>Sign in with an API key of this server. The console sees what the key sees, through the API. The key stays in this browser tab (session storage) and is sent only as the <code>x-api-key</code> header.</p>
      <label>API key <input type="password" autocomplete="off" name="apiKey" value=${key} onInput=${(e) => setKey(e.target.value)} autofocus /></label>
      <button type="submit" class="primary" disabled=${busy || key === ""}>Sign in</button>
      <${Problem} error=${error} />
    </form>
  </main>`
}

// ---------------------------------------------------------------------------------------------
// Lists

function Pager({ pagination, page, setPage, what }) {
  if (!pagination) return null
  const { totalItems, pageSize: size } = pagination
  const first = totalItems === 0 ? 0 : page * size + 1
  const last = Math.min(totalItems, (page + 1) * size)
  return html`<div class="pager">
    <span data-testid="range">${what} ${count(first)}–${count(last)} of ${count(totalItems)}</span>
    <button type="button" disabled=${page === 0} onClick=${() => setPage(page - 1)}>‹ Previous</button>
    <button type="button" disabled=${last >= totalItems} onClick=${() => setPage(page + 1)}>Next ›</button>
  </div>`
}

function Search({ value, set, placeholder }) {
  return html`<input type="search" class="search" placeholder=${placeholder} value=${value} onInput=${(e) => set(e.target.value)} />`
}

function DatasetTable({ items, sources }) {
  if (items.length === 0) return html`<p class="empty">No datasets.</p>`
  return html`<table class="list">
    <thead><tr><th>Dataset</th><th>id</th>${sources ? html`<th>Data source</th>` : null}<th>Created</th><th>Last ingestion</th></tr></thead>
    <tbody>${
    items.map((d) =>
      html`<tr key=${d.id}>
        <td><a href=${`#/datasets/${d.id}`}>${d.name || "(no name)"}</a></td>
        <td>${d.id}</td>
        ${sources ? html`<td><a href=${`#/data-sources/${d.dataSourceId}`}>${d.dataSourceId}</a></td>` : null}
        <td>${when(d.createdAt)}</td>
        <td>${d.ingestionInfo?.lastStatus ? html`<span class=${`status ${d.ingestionInfo.lastStatus}`}>${d.ingestionInfo.lastStatus}</span> ${when(d.ingestionInfo.lastIngestionAt)}` : "—"}</td>
      </tr>`
    )
  }</tbody>
  </table>`
}

// ---------------------------------------------------------------------------------------------
// Organization: data sources, and datasets across them

function OrganizationPage({ profile, confirm }) {
  const [search, setSearch] = useState("")
  const [page, setPage] = useState(0)
  const [datasetSearch, setDatasetSearch] = useState("")
  const settled = useDebounced(search, 250)
  const settledDatasets = useDebounced(datasetSearch, 250)
  useEffect(() => setPage(0), [settled])
  const sources = useApi(`/v2/data-sources${query({ page, pageSize, search: settled, sortBy: "name", sortOrder: "asc" })}`)
  const datasets = useApi(settledDatasets === "" ? null : `/v2/datasets${query({ pageSize, search: settledDatasets, sortBy: "name" })}`)
  const [name, setName] = useState("")
  const [timezone, setTimezone] = useState("UTC")
  const create = () =>
    confirm({
      title: "Create a data source",
      body: html`<p>Create the data source <b>${name}</b> (time zone ${timezone}) in ${profile.organization?.name ?? "the organization"}?</p>`,
      confirmLabel: "Create",
      run: async () => {
        const answer = await api("/v2/data-sources", { method: "POST", body: { name, timezone }, idempotencyKey: uuid() })
        return () => go(`#/data-sources/${answer.data.id}`)
      }
    })
  return html`<main>
    <h2>${profile.organization?.name ?? "Organization"}</h2>
    <section>
      <div class="section-head">
        <h3>Data sources</h3>
        <${Search} value=${search} set=${setSearch} placeholder="Search data sources" />
      </div>
      <${Problem} error=${sources.error} profile=${profile} />
      ${
    sources.data === undefined ? html`<p class="empty">Loading…</p>` : sources.data.items.length === 0 ? html`<p class="empty">No data sources${settled ? " match" : " yet"}.</p>` : html`<table class="list" data-testid="data-sources">
        <thead><tr><th>Data source</th><th>id</th><th>Time zone</th><th>Created</th><th>Last activity</th></tr></thead>
        <tbody>${
      sources.data.items.map((s) =>
        html`<tr key=${s.id}><td><a href=${`#/data-sources/${s.id}`}>${s.name || "(no name)"}</a></td><td>${s.id}</td><td>${s.timezone ?? "—"}</td><td>${when(s.createdAt)}</td><td>${when(s.lastActivityAt)}</td></tr>`
      )
    }</tbody></table>`
  }
      <${Pager} pagination=${sources.data?.pagination} page=${page} setPage=${setPage} what="data sources" />
      <form class="inline" onSubmit=${(e) => {
    e.preventDefault()
    create()
  }}>
        <strong>New data source</strong>
        <input placeholder="name" value=${name} onInput=${(e) => setName(e.target.value)} data-testid="new-source-name" />
        <input placeholder="time zone" value=${timezone} onInput=${(e) => setTimezone(e.target.value)} />
        <button type="submit" disabled=${name.trim() === ""}>Create data source…</button>
      </form>
    </section>
    <section>
      <div class="section-head">
        <h3>Find a dataset</h3>
        <${Search} value=${datasetSearch} set=${setDatasetSearch} placeholder="Search datasets by name" />
      </div>
      <${Problem} error=${datasets.error} profile=${profile} />
      ${datasets.data === undefined ? (settledDatasets === "" ? html`<p class="empty">Type to search every dataset this key can see.</p>` : null) : html`<${DatasetTable} items=${datasets.data.items} sources=${true} />`}
    </section>
  </main>`
}

// ---------------------------------------------------------------------------------------------
// A data source: its datasets; create a dataset (schema editor); delete it

function SchemaEditor({ dataSource, confirm }) {
  const [name, setName] = useState("")
  const [columns, setColumns] = useState([{ id: "", dataType: "string", key: false }])
  const update = (i, change) => setColumns(columns.map((c, j) => (i === j ? { ...c, ...change } : c)))
  const usable = columns.filter((c) => c.id.trim() !== "")
  const create = () => {
    const schema = usable.map((c) => ({ id: c.id.trim(), dataType: c.dataType }))
    const primaryKey = usable.filter((c) => c.key).map((c) => c.id.trim())
    confirm({
      title: "Create a dataset",
      body: html`<p>Create <b>${name}</b> in ${dataSource.name} with ${schema.length} column${schema.length === 1 ? "" : "s"}:</p>
        <ul>${schema.map((c) => html`<li><code>${c.id}</code> ${c.dataType}${primaryKey.includes(c.id) ? " (primary key)" : ""}</li>`)}</ul>`,
      confirmLabel: "Create",
      run: async () => {
        const answer = await api("/v2/datasets", {
          method: "POST",
          body: { name, dataSourceId: dataSource.id, schema, ...(primaryKey.length > 0 ? { primaryKey } : {}) },
          idempotencyKey: uuid()
        })
        return () => go(`#/datasets/${answer.data.id}`)
      }
    })
  }
  return html`<form class="editor" data-testid="schema-editor" onSubmit=${(e) => {
    e.preventDefault()
    create()
  }}>
    <h3>New dataset</h3>
    <label>Name <input value=${name} onInput=${(e) => setName(e.target.value)} data-testid="new-dataset-name" /></label>
    <table class="list">
      <thead><tr><th>Column id</th><th>Type</th><th>Primary key</th><th></th></tr></thead>
      <tbody>${
    columns.map((c, i) =>
      html`<tr key=${i}>
        <td><input value=${c.id} placeholder="column id" onInput=${(e) => update(i, { id: e.target.value })} data-testid=${`column-id-${i}`} /></td>
        <td><select value=${c.dataType} onChange=${(e) => update(i, { dataType: e.target.value })} data-testid=${`column-type-${i}`}>
          <option value="string">string</option><option value="number">number</option><option value="datetime">datetime</option>
        </select></td>
        <td><input type="checkbox" checked=${c.key} onChange=${(e) => update(i, { key: e.target.checked })} data-testid=${`column-key-${i}`} /></td>
        <td><button type="button" class="link" disabled=${columns.length === 1} onClick=${() => setColumns(columns.filter((_, j) => j !== i))}>remove</button></td>
      </tr>`
    )
  }</tbody>
    </table>
    <div class="buttons">
      <button type="button" onClick=${() => setColumns([...columns, { id: "", dataType: "string", key: false }])} data-testid="add-column">Add a column</button>
      <button type="submit" class="primary" disabled=${name.trim() === "" || usable.length === 0}>Create dataset…</button>
    </div>
  </form>`
}

function DataSourcePage({ id, profile, confirm }) {
  const [search, setSearch] = useState("")
  const [page, setPage] = useState(0)
  const settled = useDebounced(search, 250)
  useEffect(() => setPage(0), [settled])
  const source = useApi(`/v2/data-sources/${id}`)
  const datasets = useApi(`/v2/datasets${query({ dataSourceId: id, page, pageSize, search: settled, sortBy: "name" })}`)
  const s = source.data
  const remove = () =>
    confirm({
      title: "Delete the data source",
      danger: true,
      body: html`<p>Delete <b>${s.name}</b> and every dataset in it, with all their rows? This cannot be undone.</p>`,
      confirmLabel: "Delete",
      run: async () => {
        await api(`/v2/data-sources/${id}`, { method: "DELETE" })
        return () => go("#/")
      }
    })
  return html`<main>
    <nav class="crumbs"><a href="#/">${profile.organization?.name ?? "Organization"}</a> › ${s?.name || `data source ${id}`}</nav>
    <${Problem} error=${source.error} profile=${profile} />
    ${
    s === undefined ? null : html`<div class="title-row">
      <h2>${s.name || "(no name)"}</h2>
      <span class="facts">id ${s.id} · time zone ${s.timezone ?? "—"} · created ${when(s.createdAt)}</span>
      <span class="spacer"></span>
      <button type="button" class="danger" onClick=${remove}>Delete data source…</button>
    </div>`
  }
    <section>
      <div class="section-head">
        <h3>Datasets</h3>
        <${Search} value=${search} set=${setSearch} placeholder="Search datasets" />
      </div>
      <${Problem} error=${datasets.error} profile=${profile} />
      ${datasets.data === undefined ? html`<p class="empty">Loading…</p>` : html`<${DatasetTable} items=${datasets.data.items} />`}
      <${Pager} pagination=${datasets.data?.pagination} page=${page} setPage=${setPage} what="datasets" />
    </section>
    ${s === undefined ? null : html`<section><${SchemaEditor} dataSource=${s} confirm=${confirm} /></section>`}
  </main>`
}

// ---------------------------------------------------------------------------------------------
// A dataset: schema, rows, ingestions, throughput; ingest, purge, delete

function SchemaView({ schema, columns }) {
  if (!schema) return null
  const meta = new Map((columns?.items ?? []).map((c) => [c.id, c]))
  const keys = schema.primaryKey ?? []
  return html`<table class="list schema" data-testid="schema">
    <thead><tr><th>Column</th><th>Type</th><th>Key</th><th>Display name</th><th>Description</th><th>Concept</th><th>Synonyms</th></tr></thead>
    <tbody>${
    schema.items.map((c) => {
      const m = meta.get(c.id)
      return html`<tr key=${c.id} class=${c.visible ? "" : "hidden-column"}>
        <td><code>${c.id}</code></td><td>${c.dataType}</td><td>${keys.includes(c.id) ? html`<span class="badge">primary key</span>` : ""}</td>
        <td>${c.displayName}</td><td>${m?.description ?? "—"}</td><td>${m?.conceptType ?? "—"}</td><td>${m?.synonyms?.join(", ") || "—"}</td>
      </tr>`
    })
  }</tbody>
  </table>`
}

function RowsView({ id, refresh, profile }) {
  const [page, setPage] = useState(0)
  const [sort, setSort] = useState({ by: undefined, order: "asc" })
  const rows = useApi(`/v2/datasets/${id}/data${query({ page, pageSize, sortBy: sort.by, sortOrder: sort.by ? sort.order : undefined })}`, refresh)
  const data = rows.data
  const sortOn = (column) => {
    setSort(sort.by === column ? { by: column, order: sort.order === "asc" ? "desc" : "asc" } : { by: column, order: "asc" })
    setPage(0)
  }
  return html`<div>
    <${Problem} error=${rows.error} profile=${profile} />
    ${
    data === undefined ? html`<p class="empty">Loading…</p>` : html`<div class="scroll"><table class="list rows" data-testid="rows">
      <thead><tr>${
      data.schema.filter((c) => c.visible).map((c) =>
        html`<th key=${c.id}><button type="button" class="sort" onClick=${() => sortOn(c.id)} data-column=${c.id} title=${`sort by ${c.id}`}>
          ${c.displayName}${sort.by === c.id ? (sort.order === "asc" ? " ▲" : " ▼") : ""}
        </button></th>`
      )
    }</tr></thead>
      <tbody>${
      data.items.length === 0
        ? html`<tr><td class="empty" colspan=${Math.max(1, data.schema.length)}>No rows.</td></tr>`
        : data.items.map((row, i) => html`<tr key=${i}>${data.schema.filter((c) => c.visible).map((c) => html`<td key=${c.id}>${cell(row[c.id])}</td>`)}</tr>`)
    }</tbody>
    </table></div>`
  }
    <${Pager} pagination=${data?.pagination} page=${page} setPage=${setPage} what="rows" />
  </div>`
}

/**
 * Records per second over the last minutes, from the ingestion list and each ingestion's
 * counts: an ingestion's received records count at the moment it finished.
 */
function Throughput({ ingestions, details, now }) {
  const buckets = (chartMinutes * 60) / chartBucketSeconds
  const start = now - chartMinutes * 60_000
  const rates = new Array(buckets).fill(0)
  for (const i of ingestions) {
    const d = details.get(i.id)
    const received = d?.summary?.ingestion?.receivedRecordCount
    if (!received || !i.initiatedAt || (i.status !== "success" && i.status !== "failed")) continue
    const at = Date.parse(i.initiatedAt) + (i.duration ?? 0)
    const bucket = Math.floor((at - start) / (chartBucketSeconds * 1000))
    if (bucket >= 0 && bucket < buckets) rates[bucket] += received / chartBucketSeconds
  }
  const peak = Math.max(...rates)
  const top = peak <= 0 ? 1 : Math.pow(10, Math.ceil(Math.log10(peak)))
  const scale = peak <= 0 ? 1 : [0.2, 0.5, 1].map((f) => f * top).find((t) => t >= peak)
  const width = 600
  const height = 150
  const bar = width / buckets
  const total = rates.reduce((a, b) => a + b, 0) * chartBucketSeconds
  return html`<figure class="chart" data-testid="throughput">
    <svg viewBox=${`0 0 ${width} ${height + 20}`} role="img" aria-label="records per second">
      <line x1="0" y1=${height} x2=${width} y2=${height} class="axis" />
      <line x1="0" y1="0" x2=${width} y2="0" class="grid" />
      <line x1="0" y1=${height / 2} x2=${width} y2=${height / 2} class="grid" />
      ${rates.map((r, i) => (r <= 0 ? null : html`<rect key=${i} x=${i * bar + 1} width=${bar - 2} y=${height - (r / scale) * height} height=${(r / scale) * height} class="bar"><title>${r.toFixed(1)} records/s</title></rect>`))}
      <text x="4" y="12" class="label">${scale.toLocaleString("en")} /s</text>
      <text x="4" y=${height / 2 + 12} class="label">${(scale / 2).toLocaleString("en")} /s</text>
      <text x="0" y=${height + 16} class="label">−${chartMinutes} min</text>
      <text x=${width} y=${height + 16} class="label" text-anchor="end">now</text>
    </svg>
    <figcaption>Records per second, last ${chartMinutes} minutes (${chartBucketSeconds}-second steps): ${count(total)} records, peak ${peak.toFixed(1)}/s.</figcaption>
  </figure>`
}

function IngestionsView({ ingestions, details, total }) {
  const [open, setOpen] = useState(new Set())
  const toggle = (id) => {
    const next = new Set(open)
    next.has(id) ? next.delete(id) : next.add(id)
    setOpen(next)
  }
  if (ingestions.length === 0) return html`<p class="empty">No ingestions yet.</p>`
  return html`<table class="list" data-testid="ingestions">
    <thead><tr><th>Status</th><th>Started</th><th>By</th><th class="num">Received</th><th class="num">Appended</th><th class="num">Overwritten</th><th class="num">Rejected</th><th class="num">Duration</th><th>Id</th></tr></thead>
    <tbody>${
    ingestions.slice(0, pageSize).map((i) => {
      const d = details.get(i.id)
      const n = d?.summary?.ingestion
      const errors = d?.errors ?? []
      return html`
      <tr key=${i.id} data-ingestion=${i.id}>
        <td><span class=${`status ${i.status}`}>${i.status}</span></td>
        <td>${when(i.initiatedAt)}</td>
        <td>${i.initiatedBy?.name ?? "—"}</td>
        <td class="num">${count(n?.receivedRecordCount)}</td>
        <td class="num">${count(n?.appendedRecordCount)}</td>
        <td class="num">${count(n?.overwrittenRecordCount)}</td>
        <td class="num">${
        n?.rejectedRecordCount > 0
          ? html`<button type="button" class="link rejected" onClick=${() => toggle(i.id)} data-testid="rejected-toggle">${count(n.rejectedRecordCount)} ${open.has(i.id) ? "▾" : "▸"}</button>`
          : count(n?.rejectedRecordCount)
      }</td>
        <td class="num">${duration(i.duration)}</td>
        <td class="id">${i.id.slice(0, 8)}</td>
      </tr>
      ${
        open.has(i.id) && errors.length > 0
          ? html`<tr key=${i.id + "-errors"} class="errors"><td colspan="9"><ul data-testid="rejected-records">${
            errors.map((e, k) =>
              html`<li key=${k}><code>${e.code ?? "rejected"}</code>${e.field ? html` <b>${e.field}</b>` : ""}: ${e.message ?? ""} <pre>${JSON.stringify(e.record)}</pre></li>`
            )
          }</ul></td></tr>`
          : null
      }`
    })
  }</tbody>
  </table>
  ${total > pageSize ? html`<p class="note">The latest ${pageSize} of ${count(total)} ingestions.</p>` : null}`
}

/** Records from pasted or uploaded text: a JSON array, one JSON object, or NDJSON. */
const parseRecords = (text) => {
  const trimmed = text.trim()
  if (trimmed === "") throw new Error("nothing to ingest")
  try {
    const whole = JSON.parse(trimmed)
    return Array.isArray(whole) ? whole : [whole]
  } catch {
    // Not one JSON text: NDJSON, one record a line.
  }
  const records = []
  trimmed.split(/\r?\n/).forEach((line, i) => {
    if (line.trim() === "") return
    try {
      records.push(JSON.parse(line))
    } catch {
      throw new Error(`line ${i + 1} is not JSON: ${line.slice(0, 80)}`)
    }
  })
  return records
}

function IngestPanel({ dataset, confirm, sent }) {
  const [text, setText] = useState("")
  const [problem, setProblem] = useState(undefined)
  const [progress, setProgress] = useState(undefined)
  const file = async (event) => {
    const chosen = event.target.files?.[0]
    if (chosen) setText(await chosen.text())
  }
  const ingest = () => {
    let records
    try {
      records = parseRecords(text)
    } catch (e) {
      return setProblem(e.message)
    }
    setProblem(undefined)
    const batches = []
    for (let i = 0; i < records.length; i += batchSize) batches.push(records.slice(i, i + batchSize))
    confirm({
      title: "Ingest records",
      body: html`<p>Send ${count(records.length)} record${records.length === 1 ? "" : "s"} into <b>${dataset.name}</b>, in ${batches.length} ingestion${batches.length === 1 ? "" : "s"} of up to ${batchSize}?</p>`,
      confirmLabel: "Ingest",
      run: async () => {
        for (let b = 0; b < batches.length; b++) {
          setProgress(`sending batch ${b + 1} of ${batches.length}…`)
          // One key per batch: a batch tried again after a lost answer is not ingested twice.
          await api(`/v2/datasets/${dataset.id}/data`, { method: "POST", body: { records: batches[b] }, idempotencyKey: uuid() })
        }
        setProgress(`sent ${count(records.length)} records in ${batches.length} ingestion${batches.length === 1 ? "" : "s"}; they appear below as they are processed.`)
        setText("")
        sent()
      }
    })
  }
  return html`<div class="ingest" data-testid="ingest">
    <textarea rows="5" placeholder='NDJSON (one record a line) or a JSON array, e.g. {"id": "a-1", "amount": 12.5}' value=${text} onInput=${(e) => setText(e.target.value)} data-testid="ingest-text"></textarea>
    <div class="buttons">
      <label class="file">Or a file: <input type="file" accept=".ndjson,.jsonl,.json,application/json" onChange=${file} data-testid="ingest-file" /></label>
      <span class="spacer"></span>
      <button type="button" class="primary" disabled=${text.trim() === ""} onClick=${ingest}>Ingest…</button>
    </div>
    ${problem ? html`<div class="problem" role="alert">${problem}</div>` : null}
    ${progress ? html`<p class="note" data-testid="ingest-progress">${progress}</p>` : null}
  </div>`
}

function DatasetPage({ id, profile, confirm }) {
  const tick = useTick(pollMillis)
  const [bump, setBump] = useState(0)
  const dataset = useApi(`/v2/datasets/${id}`, tick + bump)
  const schema = useApi(`/v2/datasets/${id}/schema`, dataset.data?.columnCount)
  const columns = useApi(`/v2/datasets/${id}/column-metadata`, dataset.data?.columnCount)
  const ingestions = useApi(`/v2/datasets/${id}/ingestions${query({ pageSize: 100 })}`, tick + bump)
  // Details of ingestions: a finished one never changes, so it is asked for once.
  const details = useRef(new Map())
  const [, setDetailsSeen] = useState(0)
  const items = ingestions.data?.items ?? []
  const now = Date.now()
  useEffect(() => {
    const wanted = items.filter((i, n) => {
      const known = details.current.get(i.id)
      const recent = i.initiatedAt && Date.parse(i.initiatedAt) > now - chartMinutes * 60_000 - 60_000
      const stale = known === undefined || known.status !== i.status
      return stale && (n < pageSize || recent)
    })
    if (wanted.length === 0) return
    let live = true
    ;(async () => {
      for (let k = 0; k < wanted.length; k += 6) {
        const answers = await Promise.allSettled(wanted.slice(k, k + 6).map((i) => api(`/v2/datasets/${id}/ingestions/${i.id}`)))
        if (!live) return
        answers.forEach((a) => a.status === "fulfilled" && details.current.set(a.value.data.id, a.value.data))
        setDetailsSeen((n) => n + 1)
      }
    })()
    return () => {
      live = false
    }
  }, [ingestions.data])
  // Rows are read again when what the dataset holds changes.
  const d = dataset.data
  const source = useApi(d?.dataSourceId ? `/v2/data-sources/${d.dataSourceId}` : null)
  const rowsVersion = d === undefined ? 0 : `${d.rowCount}/${d.ingestionInfo?.initiatedAt}/${d.ingestionInfo?.status}/${bump}`
  const purge = () =>
    confirm({
      title: "Purge the dataset",
      danger: true,
      body: html`<p>Remove all ${count(d.rowCount)} rows of <b>${d.name}</b>? The dataset and its schema stay; the rows are gone for good.</p>`,
      confirmLabel: "Purge",
      run: async () => {
        await api(`/v2/datasets/${id}/purge`, { method: "POST", idempotencyKey: uuid() })
        setBump((b) => b + 1)
      }
    })
  const remove = () =>
    confirm({
      title: "Delete the dataset",
      danger: true,
      body: html`<p>Delete <b>${d.name}</b>, its schema and all ${count(d.rowCount)} rows? This cannot be undone.</p>`,
      confirmLabel: "Delete",
      run: async () => {
        await api(`/v2/datasets/${id}`, { method: "DELETE" })
        return () => go(d.dataSourceId === null ? "#/" : `#/data-sources/${d.dataSourceId}`)
      }
    })
  return html`<main>
    <nav class="crumbs"><a href="#/">${profile.organization?.name ?? "Organization"}</a> › ${
    d?.dataSourceId ? html`<a href=${`#/data-sources/${d.dataSourceId}`}>${source.data?.name || `data source ${d.dataSourceId}`}</a> › ` : ""
  }${d?.name || `dataset ${id}`}</nav>
    <${Problem} error=${dataset.error} profile=${profile} />
    ${
    d === undefined ? null : html`<div class="title-row">
      <h2 data-testid="dataset-name">${d.name || "(no name)"}</h2>
      <span class="facts">id ${d.id} · v1 id <code>${d.uuid}</code> · <span data-testid="row-count">${count(d.rowCount)} rows</span> · ${d.columnCount} columns · last ingestion ${
      d.ingestionInfo?.status ? html`<span class=${`status ${d.ingestionInfo.status}`}>${d.ingestionInfo.status}</span>` : "—"
    }</span>
      <span class="spacer"></span>
      <button type="button" class="danger" onClick=${purge}>Purge…</button>
      <button type="button" class="danger" onClick=${remove}>Delete…</button>
    </div>`
  }
    <div class="two">
      <section><h3>Schema</h3><${Problem} error=${schema.error} profile=${profile} /><${SchemaView} schema=${schema.data} columns=${columns.data} /></section>
      <section><h3>Throughput</h3><${Throughput} ingestions=${items} details=${details.current} now=${now} /></section>
    </div>
    <section><h3>Rows</h3><${RowsView} id=${id} refresh=${rowsVersion} profile=${profile} /></section>
    <section>
      <h3>Ingestions <span class="live" title=${`polled every ${pollMillis / 1000} s`}>live</span></h3>
      <${Problem} error=${ingestions.error} profile=${profile} />
      <${IngestionsView} ingestions=${items} details=${details.current} total=${ingestions.data?.pagination.totalItems ?? 0} />
    </section>
    ${d === undefined ? null : html`<section><h3>Ingest records</h3><${IngestPanel} dataset=${d} confirm=${confirm} sent=${() => setBump((b) => b + 1)} /></section>`}
  </main>`
}

// ---------------------------------------------------------------------------------------------
// The frame

function App() {
  const [signed, setSigned] = useState(sessionStorage.getItem(keySlot) !== null)
  const [profile, setProfile] = useState(undefined)
  const [profileError, setProfileError] = useState(undefined)
  const [faults, setFaults] = useState(null)
  const [ask, setAsk] = useState(undefined)
  const route = useRoute()
  onFaults = (value) => setFaults(value)
  useEffect(() => {
    if (!signed) return
    api("/v2/profile").then((answer) => setProfile(answer.data), (error) => {
      if (error.status === 401) signOut()
      else setProfileError(error)
    })
  }, [signed])
  const signOut = () => {
    sessionStorage.removeItem(keySlot)
    setProfile(undefined)
    setSigned(false)
  }
  if (!signed) return html`<${SignIn} signedIn=${() => setSigned(true)} />`
  if (profile === undefined) return html`<main>${profileError ? html`<${Problem} error=${profileError} />` : html`<p class="empty">Signing in…</p>`}</main>`
  const confirm = (a) => setAsk(a)
  const page = route.page === "dataset"
    ? html`<${DatasetPage} key=${route.id} id=${route.id} profile=${profile} confirm=${confirm} />`
    : route.page === "dataSource"
    ? html`<${DataSourcePage} key=${route.id} id=${route.id} profile=${profile} confirm=${confirm} />`
    : html`<${OrganizationPage} profile=${profile} confirm=${confirm} />`
  return html`<div class="frame">
    <header>
      <a href="#/" class="brand">tributary console</a>
      <span class="spacer"></span>
      <span class="who" data-testid="who">${profile.name} · ${profile.role} · ${profile.organization?.name ?? ""}</span>
      <button type="button" onClick=${signOut}>Sign out</button>
    </header>
    ${faults ? html`<div class="faults" data-testid="faults">This server injects faults (<code>--faults ${faults}</code>): answers may be delayed or refused and ingestions held on purpose. The console tries refused reads again.</div>` : null}
    ${page}
    ${ask ? html`<${Confirm} ask=${ask} close=${() => setAsk(undefined)} profile=${profile} />` : null}
  </div>`
}

// The page's "Loading…" text goes; render does not replace what it does not know.
const root = document.getElementById("app")
root.textContent = ""
render(html`<${App} />`, root)
