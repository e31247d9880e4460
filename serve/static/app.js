// The leaderboard page of `adr serve` (docs/api.md): plain JavaScript over the JSON API, no build.
// Pages go forwards with the API's cursor; "Previous" goes back to the cursors already seen.
"use strict";

const PAGE_SIZE = 20;
const REFRESH_MS = 5000;
const state = { cursors: [null], index: 0, ties: "unique", player: null };

const $ = (selector) => document.querySelector(selector);

function cell(row, text, numeric) {
  const td = row.insertCell();
  td.textContent = text;
  if (numeric) td.className = "num";
  return td;
}

// The studio's display name (`adr meta`, docs/api.md "Per-player metadata") when it has one.
function displayName(meta) {
  const name = meta && meta.display_name;
  return typeof name === "string" && name.trim() ? name : null;
}

// The player's cell: the display name, with the id beside it, or the id alone. Text only, never
// HTML: metadata is the studio's input, shown as written.
function playerCell(row, player, meta) {
  const td = row.insertCell();
  const name = displayName(meta);
  td.textContent = name ?? player;
  if (name !== null) {
    td.title = player;
    const id = document.createElement("span");
    id.className = "muted player-id";
    id.textContent = ` ${player}`;
    td.append(id);
  }
  return td;
}

async function api(path, params) {
  const query = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    for (const v of [].concat(value)) if (v !== null && v !== undefined) query.append(key, v);
  }
  const answer = await fetch(`${path}?${query}`);
  const body = await answer.json();
  if (!answer.ok) throw new Error(body.detail || `HTTP ${answer.status}`);
  return body;
}

async function showBoard() {
  const cursor = state.cursors[state.index];
  try {
    const page = await api("v1/top", { limit: PAGE_SIZE, cursor, ties: state.ties });
    const body = $("#board tbody");
    body.replaceChildren();
    for (const r of page.rows) {
      const row = body.insertRow();
      row.dataset.player = r.player;
      cell(row, r.rank ?? "–", true);
      playerCell(row, r.player, r.meta);
      cell(row, r.mu.toFixed(1), true);
      cell(row, r.tier ?? "No tier");
      row.addEventListener("click", () => showPlayer(r.player));
    }
    state.cursors.length = state.index + 1;
    if (page.next_cursor) state.cursors.push(page.next_cursor);
    $("#next").disabled = !page.next_cursor;
    $("#prev").disabled = state.index === 0;
    $("#status").textContent = `page ${state.index + 1}, updated ${new Date().toLocaleTimeString()}`;
    $("#status").classList.remove("error");
  } catch (err) {
    $("#status").textContent = `could not load: ${err.message}`;
    $("#status").classList.add("error");
  }
}

async function showTiers() {
  try {
    const t = await api("v1/tiers");
    const body = $("#tiers tbody");
    body.replaceChildren();
    const most = Math.max(1, ...t.rows.map((r) => r.players));
    for (const r of t.rows) {
      const row = body.insertRow();
      row.dataset.tier = r.tier;
      cell(row, r.tier);
      cell(row, r.players, true);
      cell(row, `${(100 * r.share).toFixed(1)}%`, true);
      cell(row, `${(100 * r.target_share).toFixed(1)}%`, true);
      cell(row, r.lower_bound === null ? "–" : r.lower_bound.toFixed(1), true);
      const bar = document.createElement("div");
      bar.className = "bar";
      bar.style.width = `${(100 * r.players) / most}%`;
      cell(row, "").appendChild(bar);
    }
    $("#tiers-summary").textContent =
      `${t.placed} placed of ${t.tracked} tracked players; calibration ${t.calibration_version}`;
  } catch (err) {
    $("#tiers-summary").textContent = `could not load: ${err.message}`;
  }
}

function drawChart(points) {
  const svg = $("#chart");
  svg.replaceChildren();
  const ns = "http://www.w3.org/2000/svg";
  if (points.length === 0) {
    $("#chart-note").textContent = "no rating changes recorded yet";
    return;
  }
  const mus = points.map((p) => p.mu);
  const lo = Math.min(...mus), hi = Math.max(...mus);
  const span = hi - lo || 1;
  const x = (i) => 40 + (points.length === 1 ? 270 : (540 * i) / (points.length - 1));
  const y = (mu) => 180 - (160 * (mu - lo)) / span;
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", points.map((p, i) => `${x(i).toFixed(1)},${y(p.mu).toFixed(1)}`).join(" "));
  svg.appendChild(line);
  for (const [mu, where] of [[hi, 20], [lo, 180]]) {
    const label = document.createElementNS(ns, "text");
    label.setAttribute("x", 2);
    label.setAttribute("y", where + 4);
    label.textContent = mu.toFixed(0);
    svg.appendChild(label);
  }
  const first = new Date(points[0].ts), last = new Date(points[points.length - 1].ts);
  $("#chart-note").textContent =
    `${points.length} changes, ${first.toLocaleString()} to ${last.toLocaleString()}`;
}

async function showPlayer(player) {
  state.player = player;
  $("#profile").hidden = false;
  $("#profile-title").textContent = player;
  const facts = $("#facts");
  facts.replaceChildren();
  const fact = (name, value) => {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    facts.append(dt, dd);
  };
  const url = new URL(location.href);
  url.searchParams.set("player", player);
  history.replaceState(null, "", url);
  try {
    const p = await api("v1/profile", { player, ties: state.ties });
    const name = displayName(p.meta);
    if (name !== null) {
      $("#profile-title").textContent = name;
      fact("Player id", p.player);
    }
    fact("Rank", p.rank ?? "not placed yet");
    fact("Rating (μ)", p.mu.toFixed(1));
    fact("Uncertainty (σ)", p.sigma === null ? "–" : p.sigma.toFixed(1));
    fact("Tier", p.tier ?? "No tier");
    fact("Counted events", p.events);
    fact("Last seen", p.last_seen_ms === null ? "–" : new Date(p.last_seen_ms).toLocaleString());
    for (const [key, value] of Object.entries(p.meta || {})) {
      if (key !== "display_name") fact(key, value === null ? "–" : String(value));
    }
    drawChart(p.history);
  } catch (err) {
    fact("Error", err.message);
    facts.classList.add("error");
    drawChart([]);
  }
}

function start() {
  $("#next").addEventListener("click", () => { state.index += 1; showBoard(); });
  $("#prev").addEventListener("click", () => { state.index = Math.max(0, state.index - 1); showBoard(); });
  $("#first").addEventListener("click", () => { state.index = 0; showBoard(); });
  $("#ties").addEventListener("change", (e) => {
    state.ties = e.target.value;
    state.cursors = [null];
    state.index = 0;
    showBoard();
    if (state.player) showPlayer(state.player);
  });
  $("#search").addEventListener("submit", (e) => {
    e.preventDefault();
    const player = $("#player").value.trim();
    if (player) showPlayer(player);
  });
  const params = new URLSearchParams(location.search);
  if (params.get("page")) {
    // ?page=N: walk N-1 pages forwards (for links and the browser test)
    state.walk = Math.max(0, parseInt(params.get("page"), 10) - 1) || 0;
  }
  const walk = async () => {
    await showBoard();
    while (state.walk > 0 && state.cursors.length > state.index + 1) {
      state.walk -= 1;
      state.index += 1;
      await showBoard();
    }
  };
  walk();
  showTiers();
  if (params.get("player")) {
    $("#player").value = params.get("player");
    showPlayer(params.get("player"));
  }
  setInterval(() => { showBoard(); showTiers(); }, REFRESH_MS);
}

start();
