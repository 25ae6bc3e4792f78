// LLAMA-RL in the browser: one page for playing, watching and replaying games.
// The server sends the state the page may show (your hand, never the others' or the
// order of the draw pile) and the moves since the last request, each with a picture
// of the table after it; the page shows them one by one at a pace a person can follow.
"use strict";

const $ = (id) => document.getElementById(id);
const CARD = (c) => (c === 7 ? "L" : String(c));
let game = null;          // the last state from the server
let queue = [];           // events still to show
let animating = false;
let autoplay = null;
window.llamaIdle = true;  // for tests: nothing is being shown or fetched

async function api(method, path, body) {
  const response = await fetch(path, {
    method,
    headers: body === undefined ? {} : { "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const data = await response.json();
  if (!response.ok) throw new Error(data.error || `HTTP ${response.status}`);
  return data;
}

function delay() {
  const speed = Number($("speed").value || 4);
  return Math.round(1400 / speed);
}

// ------------------------------------------------------------------ setup

let agentNames = ["heuristic", "random", "greedy", "cautious", "ppo"];

function seatControls() {
  const n = Number($("players").value);
  const mode = $("mode").value;
  $("seat-label").classList.toggle("hidden", mode !== "play");
  const seat = $("seat");
  const keep = Number(seat.value || 0);
  seat.innerHTML = "";
  for (let p = 0; p < n; p++) seat.add(new Option(`seat ${p}${p === 0 ? " (starts)" : ""}`, String(p)));
  seat.value = String(Math.min(keep, n - 1));
  const box = $("seat-agents");
  box.innerHTML = "";
  for (let p = 0; p < n; p++) {
    if (mode === "play" && p === Number(seat.value)) continue;
    const label = document.createElement("label");
    label.textContent = `seat ${p}`;
    const input = document.createElement("input");
    input.setAttribute("list", "agent-list");
    input.className = "agent";
    input.dataset.seat = String(p);
    input.value = "heuristic";
    input.size = 14;
    label.appendChild(input);
    box.appendChild(label);
  }
}

async function loadAgents() {
  try {
    const agents = await api("GET", "/api/agents");
    agentNames = agents.map((a) => a.name);
  } catch (err) { /* keep the defaults */ }
  const list = document.createElement("datalist");
  list.id = "agent-list";
  for (const name of agentNames) list.appendChild(new Option(name, name));
  document.body.appendChild(list);
}

async function start() {
  $("setup-error").textContent = "";
  const mode = $("mode").value;
  const players = Number($("players").value);
  const agents = [...document.querySelectorAll("#seat-agents input.agent")].map((i) => i.value.trim());
  const body = { mode, players };
  if (mode === "play") { body.seat = Number($("seat").value); body.opponents = agents; } else { body.agents = agents; }
  if ($("seed").value !== "") body.seed = Number($("seed").value);
  if ($("end-score").value !== "") body.end_score = Number($("end-score").value);
  try {
    begin(await api("POST", "/api/games", body));
  } catch (err) {
    $("setup-error").textContent = err.message;
  }
}

async function replayFile(event) {
  const file = event.target.files[0];
  if (!file) return;
  $("setup-error").textContent = "";
  try {
    const record = JSON.parse(await file.text());
    begin(await api("POST", "/api/replays", record));
  } catch (err) {
    $("setup-error").textContent = err.message;
  }
  event.target.value = "";
}

function begin(state) {
  stopAutoplay();
  queue = [];
  $("log").innerHTML = "";
  $("round-result").classList.add("hidden");
  $("standings").classList.add("hidden");
  $("download").classList.add("hidden");
  $("setup").classList.add("hidden");
  $("game").classList.remove("hidden");
  $("play-controls").classList.toggle("hidden", state.mode !== "play");
  $("watch-controls").classList.toggle("hidden", state.mode === "play");
  receive(state);
}

// ------------------------------------------------------------------ showing

function receive(state) {
  game = state;
  window.llamaState = state;  // for tests and the curious: what the server sent
  queue.push(...state.events);
  if (!animating) showNext();
}

function log(text, cls) {
  const li = document.createElement("li");
  li.textContent = text;
  if (cls) li.className = cls;
  $("log").appendChild(li);
  $("log-panel").scrollTop = $("log-panel").scrollHeight;
}

function showNext() {
  if (queue.length === 0) {
    animating = false;
    render();
    window.llamaIdle = true;
    return;
  }
  animating = true;
  window.llamaIdle = false;
  disableInput();
  const event = queue.shift();
  $("table").innerHTML = event.svg;
  if (event.type === "round") {
    log(event.text, "round");
    showRound(event);
  } else {
    log(event.text);
  }
  setTimeout(showNext, queue.length ? delay() : Math.min(delay(), 250));
}

function showRound(event) {
  const names = game.seats.map((s) => s.name);
  const rows = event.scores.map((score, p) => {
    const change = event.penalties[p] ? `+${event.penalties[p]}` : event.returned[p] ? `−${event.returned[p]}` : "+0";
    const hand = event.hands[p].map(CARD).join(" ") || "—";
    return `<tr><td>${names[p]}</td><td>${hand}</td><td>${change}</td><td>${score}</td></tr>`;
  });
  $("round-result").innerHTML =
    `<h3>${event.text}</h3><table><tr><th>player</th><th>cards</th><th>points</th><th>score</th></tr>${rows.join("")}</table>`;
  $("round-result").classList.remove("hidden");
}

function disableInput() {
  for (const b of document.querySelectorAll("#hand button, #draw, #quit, #step, #play")) b.disabled = true;
}

function render() {
  if (!game) return;
  $("table").innerHTML = game.svg;
  $("game-error").textContent = "";
  if (game.mode === "play") {
    const legal = new Set(game.legal);
    const hand = $("hand");
    hand.innerHTML = "";
    for (const card of game.hand) {
      const b = document.createElement("button");
      b.className = `card c${card}`;
      b.textContent = CARD(card);
      b.dataset.action = String(card - 1);
      b.disabled = !legal.has(card - 1);
      if (!b.disabled) b.classList.add("legal");
      b.setAttribute("aria-label", card === 7 ? "play a llama" : `play ${card}`);
      b.addEventListener("click", () => move(card - 1));
      hand.appendChild(b);
    }
    $("draw").disabled = !legal.has(7);
    $("quit").disabled = !legal.has(8);
    $("turn").textContent = game.game_over ? "The game is over." : game.your_turn ? "Your turn." : "Waiting…";
    $("penalty").textContent = game.game_over ? "" : `Your hand would cost ${game.penalty} points now.`;
  } else {
    const done = game.game_over || (game.mode === "replay" && game.moves_left === 0);
    $("step").disabled = done;
    $("play").disabled = done || autoplay !== null;
    if (done) stopAutoplay();
  }
  if (game.game_over) showStandings();
  const recordable = game.game_over || game.mode !== "play";
  $("download").classList.toggle("hidden", !recordable);
  if (recordable) $("download").href = `/api/games/${game.id}/record`;
}

function showStandings() {
  const rows = game.standings.map(
    (s, i) => `<tr class="${s.winner ? "winner" : ""}"><td>${i + 1}</td><td>${s.name}</td><td>${s.score}</td></tr>`,
  );
  $("standings").innerHTML =
    `<h3>Final standings</h3><table><tr><th>#</th><th>player</th><th>score</th></tr>${rows.join("")}</table>`;
  $("standings").classList.remove("hidden");
}

// ------------------------------------------------------------------ acting

async function move(action) {
  if (animating || !game || !game.your_turn) return;
  window.llamaIdle = false;
  disableInput();
  $("round-result").classList.add("hidden");
  try {
    receive(await api("POST", `/api/games/${game.id}/move`, { action }));
  } catch (err) {
    $("game-error").textContent = err.message;
    render();
    window.llamaIdle = true;
  }
}

async function step() {
  if (!game || game.game_over) return;
  window.llamaIdle = false;
  try {
    receive(await api("POST", `/api/games/${game.id}/step`, { moves: 1 }));
  } catch (err) {
    $("game-error").textContent = err.message;
    stopAutoplay();
    window.llamaIdle = true;
  }
}

function playAuto() {
  if (autoplay !== null) return;
  const tick = async () => {
    if (!game || game.game_over || (game.mode === "replay" && game.moves_left === 0)) { stopAutoplay(); render(); return; }
    if (!animating) await step();
    autoplay = setTimeout(tick, delay());
  };
  autoplay = setTimeout(tick, 0);
  $("play").disabled = true;
}

function stopAutoplay() {
  if (autoplay !== null) clearTimeout(autoplay);
  autoplay = null;
  if (game && !animating) $("play").disabled = game.game_over;
}

// ------------------------------------------------------------------ wiring

$("mode").addEventListener("change", seatControls);
$("players").addEventListener("change", seatControls);
$("seat").addEventListener("change", seatControls);
$("start").addEventListener("click", start);
$("replay-file").addEventListener("change", replayFile);
$("draw").addEventListener("click", () => move(7));
$("quit").addEventListener("click", () => move(8));
$("step").addEventListener("click", step);
$("play").addEventListener("click", playAuto);
$("pause").addEventListener("click", stopAutoplay);
$("new-game").addEventListener("click", () => {
  stopAutoplay();
  $("game").classList.add("hidden");
  $("setup").classList.remove("hidden");
});
seatControls();
loadAgents();
