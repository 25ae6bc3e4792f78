// LLAMA-RL in the browser: one page for playing (alone or with friends), watching and
// replaying games, and the history of finished games with ratings.
//
// The server sends what this page's seat may see (its own hand, never the others' or
// the order of the draw pile) and the events since the last request, each with the
// table after it; the page shows them one by one at a pace a person can follow (a page
// opened on a game under way writes its past at once). Every
// request about a game carries the token of the page's seat (from the link's #fragment,
// which never reaches a server). Names and messages are written as text, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const CARD = (c) => (c === 7 ? "L" : String(c));
const CARD_NAME = (c) => (c === 7 ? "a llama" : `a ${c}`);
const CARD_WORD = (c) => (c === 7 ? "llama" : String(c));
const TOP_NAME = (c) => `the ${CARD_WORD(c)}`;
// Rule 4, as the rules on the page say it (the server's legal moves decide): on a card
// its value or one more, on a 6 a 6 or a llama, on a llama a llama or a 1.
const PLAYABLE_ON = (top) => [top, top % 7 + 1];
let game = null;          // the last state from the server
let token = null;         // this page's seat token
let queue = [];           // events still to show
let animating = false;
let autoplay = null;
let poller = null;
let historyOffset = 0;
let historyShown = new Set();  // the ids of the saved games listed (newer ones may arrive meanwhile)
let pollFailures = 0;      // requests in a row that did not reach the server
window.llamaIdle = true;  // for tests: nothing is being shown or fetched
window.llamaAnimated = 0;  // for tests: events shown one by one since the page opened a game

// An element with text children (strings become text nodes, never markup).
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value;
    else if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// The browser's site storage (the name last typed, the links of the games started here),
// where it lets the page have it: with cookies blocked, reading localStorage throws, and a
// full one refuses a write. The page then keeps nothing across reloads, and works on.
const storage = {
  get(key) {
    try { return localStorage.getItem(key); } catch (err) { return null; }
  },
  set(key, value) {
    try { localStorage.setItem(key, value); } catch (err) { /* storage off or full */ }
  },
};

// A request with this page's seat token (or `seatToken`); `text` is a body already written
// as JSON. A game record travels as the text it came in: JSON.parse would round the
// generator's 128-bit state in it to a float, and the server would refuse the record.
async function send(method, path, text, seatToken = token) {
  const headers = {};
  if (text !== undefined) headers["Content-Type"] = "application/json";
  if (seatToken) headers["X-Llama-Token"] = seatToken;
  const response = await fetch(path, { method, headers, body: text });
  if (!response.ok) {
    let data = {};
    try { data = await response.json(); } catch (err) { /* not JSON */ }
    const error = new Error(data.error || `HTTP ${response.status}`);
    error.status = response.status;
    throw error;
  }
  return response;
}

async function api(method, path, body, seatToken = token) {
  return apiText(method, path, body === undefined ? undefined : JSON.stringify(body), seatToken);
}

async function apiText(method, path, text, seatToken = token) {
  let response;
  try {
    response = await send(method, path, text, seatToken);
  } catch (err) {
    if (err.status === undefined) err.message = "the server cannot be reached (is llama-rl serve still running?)";
    throw err;
  }
  try { return await response.json(); } catch (err) { return {}; }
}

function delay() {
  return Math.round(1400 / Number($("speed").value || 4));
}

// The speed of the moves shown, one for the games played here and one for those watched
// or replayed (a watch at full speed left a played game's agents at it, with no control
// shown), kept in the browser's site storage where it lets the page, else for this tab.
const SPEEDS = "llama-speeds";
const speeds = { play: 4, watch: 4 };

function speedKind(mode) {
  return mode === "play" ? "play" : "watch";
}

// What the site storage keeps under `key`, if `isOk` takes it, else `empty`.
function keptJSON(key, isOk, empty) {
  try {
    const kept = JSON.parse(storage.get(key) || "null");
    return isOk(kept) ? kept : empty;
  } catch (err) { return empty; }
}

function keptSpeeds() {
  return keptJSON(SPEEDS, (kept) => kept !== null && typeof kept === "object", {});
}

function fitSpeed(mode) {
  const kept = Number(keptSpeeds()[speedKind(mode)]);
  $("speed").value = String(kept >= 1 && kept <= 10 ? kept : speeds[speedKind(mode)]);
}

function keepSpeed() {
  if (!game) return;
  const kind = speedKind(game.mode);
  speeds[kind] = Number($("speed").value);
  storage.set(SPEEDS, JSON.stringify({ ...keptSpeeds(), [kind]: speeds[kind] }));
}

function show(section) {
  for (const id of ["setup", "game", "history"]) $(id).classList.toggle("hidden", id !== section);
  $("nav-game").classList.toggle("hidden", section === "game" || !game);
  navGame();
}

// "Back to the game" says when the game waits for this page's move.
function navGame() {
  $("nav-game").textContent = game && game.mode === "play" && game.your_turn ? "Back to the game: your turn" : "Back to the game";
}

// A replay, a new game or another of this browser's games takes this page's place at the
// table: the page follows one game at a time. A seat it still plays is asked about first
// (another person there could then hand it to an agent, and the history count the game as
// lost; at a table of agents the game waits);
// once the seat is no longer played here (the game ended meanwhile, or the others handed
// it to an agent) there is nothing left to ask about, and the click goes ahead.
async function leaveSeatFor(what, yes) {
  if (!seated()) return true;
  const id = game.id;
  const others = game.table.seats.some((s, p) => p !== game.seat && s.person);
  const then = others ?
    "which goes on: the others may let an agent play your seat, and your game history would count the game as lost." :
    "which waits for you.";
  const question = `${what}? This page then stops following your game, ${then} The browser's Back button leads back to the game.`;
  return (await ask(question, yes, () => Boolean(game && game.id === id && seated()))) !== false;
}

// Whether this page holds a seat a person still plays in a game going on: the page then
// keeps asking for the game while the person looks at the history or sets up another
// game, or the table would take them for away and could hand their seat to an agent.
function seated() {
  return Boolean(game && game.mode === "play" && !ended() && game.table.seats[game.seat]?.person);
}

// Whether the game of state `s` (default: the open game's) has ended: over, or stopped for
// good by an agent's failure.
function ended(s = game) {
  return Boolean(s.game_over || s.stopped);
}

// The address bar holds the open game's link (a replay's too), #history for the history
// and nothing for the new-game form; while the page holds a seat, the history's and the
// form's addresses keep the seat's link (#history&game=...&token=..., #new&game=...), so a
// reload there (a phone's pull to refresh) follows the game again. Opening another view
// pushes a new entry, so the browser's Back goes to the view before (the game before: a
// friend's only copy of their link).
function goTo(hash, replace = false) {
  if (location.hash === hash) return;
  if (replace) history.replaceState(null, "", hash || location.pathname);
  else history.pushState(null, "", hash || location.pathname);
}

function gameHash(id, seatToken) {
  return `#game=${id}&token=${seatToken}`;
}

// The address of `view` ("game", "history" or "setup") as this page stands.
function viewHash(view) {
  if (view === "game") return game ? gameHash(game.id, token) : "";
  const seat = seated() ? `&game=${game.id}&token=${token}` : "";
  if (view === "history") return `#history${seat}`;
  return seat ? `#new${seat}` : "";
}

// Another game, opened from the form shown while seated, takes the form's entry: the
// browser's Back then leads back to the game the form was opened from (as the question
// before says).
function goToGame(id, seatToken) {
  goTo(gameHash(id, seatToken), location.hash.startsWith("#new&"));
}

// ------------------------------------------------------------------ setup

function seatRows() {
  const n = Number($("players").value);
  const box = $("seat-rows");
  const old = [...box.querySelectorAll(".seat-row")].map((row) => ({
    kind: row.querySelector("select").value, text: row.querySelector("input").value,
  }));
  box.replaceChildren();
  for (let p = 0; p < n; p++) {
    const keep = old[p] || { kind: p === 0 ? "person" : "agent", text: "" };
    const kind = el("select", { "aria-label": `seat ${p}` },
      el("option", { value: "person", text: "Person" }), el("option", { value: "agent", text: "Agent" }));
    kind.value = keep.kind;
    const input = el("input", { class: "seat-input", size: "16", maxlength: "100", "aria-label": `seat ${p}: name or agent` });
    const fit = () => {
      const person = kind.value === "person";
      input.setAttribute("list", person ? "" : "agent-list");
      input.placeholder = person ? "name" : "agent";
      if (!input.value || input.dataset.auto === "1") {
        input.value = person ? (p === 0 ? (storage.get("llama-name") || "Guest") : `Guest ${p}`) : "heuristic";
        input.dataset.auto = "1";
      }
    };
    input.addEventListener("input", () => { input.dataset.auto = "0"; });
    kind.addEventListener("change", () => { input.dataset.auto = "1"; fit(); fitSeed(); });
    input.value = keep.text;
    fit();
    box.append(el("div", { class: "row seat-row", "data-seat": String(p) }, el("span", { class: "seat-no", text: `seat ${p}` }), kind, input));
  }
  fitSeed();
}

// A game of several people takes no seed (the server refuses one: whoever chose it could
// deal it again in a watched game and see the others' hands), so the field is off, saying
// why, while more than one seat is a person; what was typed in it comes back with it.
function fitSeed() {
  const people = [...document.querySelectorAll("#seat-rows .seat-row select")].filter((s) => s.value === "person").length;
  $("seed").disabled = people > 1;
  $("seed-why").classList.toggle("hidden", people <= 1);
}

async function loadAgents() {
  let names = ["heuristic", "random", "greedy", "cautious", "ppo", "search"];
  try { names = (await api("GET", "/api/agents")).map((a) => a.name); } catch (err) { /* keep the defaults */ }
  $("agent-list").replaceChildren(...names.map((n) => el("option", { value: n })));
}

// The rule options as the server declares them (GET /api/rules): one number field each in
// the new-game form (its id the option's name, end_score -> end-score), sent as the body
// field of that name, and the words that name a saved game's options in the history.
let ruleOptions = [];
let rulesLoaded = Promise.resolve();

function loadRules() {
  rulesLoaded = api("GET", "/api/rules").then((options) => {
    ruleOptions = options;
    $("rule-fields").replaceChildren(...options.map(ruleField));
    fitRuleFields();
  }, (err) => {
    $("setup-error").textContent = `The rule options cannot be set now (${err.message}): a game starts with the standard rules.`;
  });
}

function ruleFieldId(name) {
  return name.replaceAll("_", "-");
}

function ruleField(option) {
  const [before, after = ""] = option.label.split("{}");
  const input = el("input", {
    id: ruleFieldId(option.name), type: "number", min: String(option.low), value: String(option.default),
    title: option.help, "data-option": option.name,
  });
  return el("label", {}, ...[before, input, after].filter((part) => part !== ""));
}

// An option's largest value may depend on the table size (the deck bounds the hand): its
// field follows the number of players, and a value above the new bound comes down to it.
function fitRuleFields() {
  const players = $("players").value;
  for (const option of ruleOptions) {
    const input = $(ruleFieldId(option.name));
    const high = option.high[players];
    input.max = String(high);
    if (input.value !== "" && Number(input.value) > high) input.value = String(high);
  }
}

// A saved game's options that differ from the standard rules, in the page's words ("5 cards").
function changedRules(options) {
  const known = new Map(ruleOptions.map((o) => [o.name, o]));
  return Object.entries(options || {})
    .filter(([name, value]) => !known.has(name) || known.get(name).default !== value)
    .map(([name, value]) => (known.has(name) ? known.get(name).brief.replace("{}", value) : `${name.replaceAll("_", " ")} ${value}`))
    .join(", ");
}

// An error of the form, under it: brought into view (on a phone it was below the screen,
// and Start seemed to do nothing). Returns the text.
function setupError(text) {
  $("setup-error").textContent = text;
  if (text) $("setup-error").scrollIntoView({ block: "nearest" });
  return text;
}

let starting = false;  // a game is being created: a second click must not create another

// The seed as typed, digits only, for the body's JSON as they are: Number() rounds a seed
// above 2^53 (9007199254740993 dealt the game of ...992, and the server's largest seed,
// 2^63 - 1, came out as 9223372036854776000). null: no seed; undefined: not a seed.
function seedDigits() {
  const input = $("seed");
  if (input.disabled) return null;
  const text = input.value.trim();
  if (input.validity.badInput || (text !== "" && !/^[0-9]+$/.test(text))) return undefined;
  return text === "" ? null : text.replace(/^0+(?=[0-9])/, "");  // (JSON takes no leading zero)
}

async function start() {
  if (starting) return;
  $("setup-error").textContent = "";
  const seats = [...document.querySelectorAll("#seat-rows .seat-row")].map((row) => {
    const text = row.querySelector("input").value.trim();
    return row.querySelector("select").value === "person" ? { person: text } : { agent: text };
  });
  const seed = seedDigits();
  if (seed === undefined) {
    setupError("The seed must be a whole number from 0 to 9223372036854775807, or empty for a random deal.");
    return;
  }
  const body = { seats };
  for (const input of $("rule-fields").querySelectorAll("input")) {
    // what the browser cannot read as a number ("3-", "10e") reads "": the game started with the default
    if (input.validity.badInput) {
      const option = ruleOptions.find((o) => o.name === input.dataset.option);
      setupError(`'${option.label.replace("{}", "…")}' must be a whole number, or empty for ${option.default}.`);
      return;
    }
    if (input.value !== "") body[input.dataset.option] = Number(input.value);
  }
  const text = JSON.stringify(body);
  starting = true;  // (Start stays on while asked: the keyboard's focus comes back to it on Cancel)
  try {
    if (!(await leaveSeatFor("Start a new game", "Start"))) return;
    $("start").disabled = true;
    if (seats[0].person) storage.set("llama-name", seats[0].person);
    const state = await apiText("POST", "/api/games", seed === null ? text : `${text.slice(0, -1)},"seed":${seed}}`);
    token = state.token;
    goToGame(state.id, token);
    begin(state);
  } catch (err) {
    setupError(err.message);
  } finally {
    starting = false;
    $("start").disabled = false;
  }
}

async function replayFile(event) {
  const file = event.target.files[0];
  if (!file) return;
  if (!(await leaveSeatFor("Open the replay", "Open the replay"))) { event.target.value = ""; return; }
  $("setup-error").textContent = "";
  try {
    const text = await file.text();
    const state = await (await send("POST", "/api/replays", text)).json();
    token = state.token;
    goToGame(state.id, token);
    begin(state);
  } catch (err) {
    setupError(err.message);
  }
  event.target.value = "";
}

function link(id, seatToken) {
  return `${location.origin}${location.pathname}${gameHash(id, seatToken)}`;
}

// The invitation links of the games this browser started (the server gives them once, to
// the page that starts the game): kept for the last 20 games, so a reload shows them again.
// Each with the time this browser last had the game open (seen), and done once the game is
// over or the seat no longer played by a person (nothing to go back to).
const INVITES = "llama-invites";

function keptInvites() {
  return keptJSON(INVITES, Array.isArray, []);
}

function writeInvites(list) {
  storage.set(INVITES, JSON.stringify(list.slice(-20)));
}

function forgetInvites(id) {
  writeInvites(keptInvites().filter((g) => g.id !== id));
}

function markInvites(id, fields) {
  writeInvites(keptInvites().map((g) => (g.id === id ? { ...g, ...fields } : g)));
}

function keepInvites(state) {
  const list = keptInvites().filter((g) => g.id !== state.id);
  list.push({ id: state.id, token: state.token, links: state.links, started: Date.now(), seen: Date.now() });
  writeInvites(list);
}

function invitesOf(state) {
  if (state.links) { keepInvites(state); return state.links; }
  const found = keptInvites().find((g) => g.id === state.id && g.token === token);
  if (!found) return [];
  markInvites(state.id, { seen: Date.now() });
  return found.links;
}

const LOOPBACK = ["127.0.0.1", "localhost", "[::1]", "::1"];

function begin(state, opened = false) {
  stopAutoplay();
  stopPolling();
  queue = [];
  pollFailures = 0;
  window.llamaAnimated = 0;
  game = null;
  $("log").replaceChildren();
  showTurn("");  // (not the last game's result while this one's first moves are shown)
  $("penalty").textContent = "";
  $("round-result").classList.add("hidden");
  $("standings").classList.add("hidden");
  $("download").classList.add("hidden");
  $("game-error").textContent = "";
  show("game");
  $("you").classList.toggle("hidden", state.mode !== "play");
  for (const id of ["step", "play", "pause"]) $(id).classList.toggle("hidden", state.mode === "play");  // (the speed stays)
  fitSpeed(state.mode);
  // (what had the focus, Start or a replay's button, is hidden now: a game watched or replayed is stepped)
  if (state.mode !== "play" && focusLost()) $("step").focus({ preventScroll: true });
  const others = (state.mode === "play" ? invitesOf(state) : []).filter((l) => l.seat !== state.seat);
  $("invites").classList.toggle("hidden", others.length === 0);
  $("invite-local").classList.toggle("hidden", !LOOPBACK.includes(location.hostname));
  $("invite-list").replaceChildren(...others.map((l) => {
    const input = el("input", {
      readonly: "", value: link(state.id, l.token), class: "invite", "data-seat": String(l.seat),
      "aria-label": `link for seat ${l.seat} (${l.name})`,
    });
    const note = el("span", { class: "copy-note", role: "status" });
    const copy = el("button", {
      text: "Copy", "aria-label": `copy the link for seat ${l.seat} (${l.name})`,
      onclick: () => copyLink(input, note),
    });
    return el("li", { "data-seat": String(l.seat) }, el("span", { text: `seat ${l.seat} (${l.name}) ` }), input, copy, note);
  }));
  receive(state, opened);
}

// Copies an invitation link and says whether it did. The clipboard's API exists only in a
// secure context (https, or this computer's own address): a page opened at
// http://ADDRESS on the network copies the selected link instead, and where that fails
// too the link stays selected for the person to copy.
function copyLink(input, note) {
  const said = (copied) => {
    note.textContent = copied ? "Copied" : "Select and copy the link";
    clearTimeout(note.timer);
    if (copied) note.timer = setTimeout(() => { note.textContent = ""; }, 4000);
  };
  input.select();
  if (navigator.clipboard && window.isSecureContext) {
    navigator.clipboard.writeText(input.value).then(() => said(true), () => said(copySelected(input)));
  } else {
    said(copySelected(input));
  }
}

function copySelected(input) {
  input.focus();
  input.select();
  try { return document.execCommand("copy"); } catch (err) { return false; }
}

// Opens the game of a link; `behind` another view (the history or the form) it is only
// followed, and one that does not open is let go without a word.
async function openLink(id, seatToken, behind = false) {
  token = seatToken;
  try {
    begin(await api("GET", `/api/games/${encodeURIComponent(id)}`), true);
  } catch (err) {
    token = null;
    game = null;
    if (behind) return;
    show("setup");
    const why = err.status === 403 ? "its token is not this game's (ask for the link again)" : err.message;
    const said = setupError(`That game link does not open a game: ${why}. Start a new game above.`);
    // (the games offered, and the rule fields on a page just opened, push it down)
    Promise.all([offerKeptGames(), rulesLoaded]).then(() => { if ($("setup-error").textContent === said) setupError(said); });
  }
}

// ------------------------------------------------------------------ showing

// The server's state of the game becomes the page's (without showing its events).
function adopt(state) {
  game = state;
  window.llamaState = state;  // for tests and the curious: what the server sent
  fitInvites();  // from the state itself: render waits while moves are still to show
}

function receive(state, opened = false) {
  adopt(state);
  if (state.truncated) log("(earlier moves left out)", "note");
  if (opened) {  // the game so far, written at once: only what happens from now on is shown move by move
    for (const event of state.events) logEvent(event);
    const result = unseenRound(state);
    if (result) showRound(result);  // (a reload keeps the result that was open)
  } else {
    queue.push(...state.events);
  }
  if (!animating) showNext();
}

// The last round's result, when it may not have been seen yet: no move of this page's
// seat (of any seat, watching) came after it.
function unseenRound(state) {
  const last = state.events.findLastIndex((e) => e.type === "round");
  if (last < 0) return null;
  const moved = state.events.slice(last + 1).some((e) => e.type === "move" && (state.mode !== "play" || e.seat === state.seat));
  return moved ? null : state.events[last];
}

function log(text, cls) {
  const li = el("li", { text });
  if (cls) li.className = cls;
  $("log").append(li);
  const panel = $("log").closest(".log-panel");  // scrolled inside: the page must not jump away from the hand
  panel.scrollTop = panel.scrollHeight;
}

function logEvent(event) {
  log(event.text, event.type === "move" ? "" : event.type);
}

function showNext() {
  if (queue.length && $("game").classList.contains("hidden")) {
    // the person looks at the history or the form: what happens meanwhile is written at
    // once, not shown move by move off screen nor read out (the last result waits for them)
    for (const event of queue.splice(0)) {
      drawTable(event.table, false);
      logEvent(event);
      if (event.type === "round") showRound(event);
    }
  }
  // the next round's moves wait for the round's result to be closed (see closeRound):
  // they went on under it, and the person saw the table only once they were over
  if (queue.length === 0 || (queue[0].type === "move" && roundOpen())) {
    animating = false;
    render();  // (which returns at once while moves wait in the queue)
    window.llamaIdle = true;
    schedulePoll();
    return;
  }
  animating = true;
  window.llamaIdle = false;
  disableInput();
  const event = queue.shift();
  window.llamaAnimated += 1;
  drawTable(event.table, false);
  logEvent(event);
  $("announce").textContent = event.text;  // read out by screen readers
  turnSaid = "";  // (the turn line after these moves is read out, even the one read before them)
  if (game.mode === "play") {
    showTurn(playingNow(event.table));
    $("penalty").style.visibility = "hidden";  // (the server's figure is the hand's once the moves are shown)
  }
  if (event.type === "round") showRound(event);
  setTimeout(showNext, queue.length ? delay() : Math.min(delay(), 250));
}

// The line over the hand says whose turn it is on the table shown: while moves are shown
// one by one, who plays next on that table (render writes the line of the table at rest),
// and while this page's move is on its way, that. It is not a live region: the line at
// rest is read out through #announce when it changes (see sayTurn), not every step of it.
function showTurn(text, mine = false) {
  $("turn").textContent = text;
  $("turn").classList.toggle("mine", mine);
}

function playingNow(table) {
  if (table.game_over) return "Game over.";
  const p = table.current_player;
  return p === game.seat && table.seats[p].person ? "Your turn…" : `${table.seats[p].name} is playing…`;
}

let turnSaid = "";  // the turn line last read out

function sayTurn(text) {
  if (text === turnSaid || $("game").classList.contains("hidden")) return;  // (not read out off screen)
  turnSaid = text;
  $("announce").textContent = text;
}

function cardFace(card, small) {
  return el("span", { class: `card face c${card}${small ? " small" : ""}`, text: CARD(card), role: "img", "aria-label": CARD_NAME(card) });
}

// A person still at the table may hand the seat the table waits for to an agent when that
// seat's page has been away a while, or its move has been awaited long (the server says
// whose: game.away); the seat then says who plays it.
function canHandOver(p) {
  return game && game.mode === "play" && !game.game_over && game.table.current_player === p &&
    game.away.includes(p) && game.table.seats[game.seat].person;
}

// A seat's name as text with a place to break after each ':' and ',' (a <wbr>): an agent's
// spec on a phone's narrow seat then breaks between its parts ("search:" over "worlds=16"),
// where it was cut inside a word ("search:worl" over "ds=16"). Its text is unchanged.
function breakable(name) {
  return name.split(/(?<=[:,])/).flatMap((part, k) => (k ? [el("wbr"), part] : [part]));
}

function drawTable(table, live) {
  const active = document.activeElement;  // the seats are drawn anew: a focused button there keeps the focus
  const refocus = active && active.classList.contains("hand-over") ? active.dataset.seat : null;
  const seats = table.seats.map((seat, p) => {
    const tags = [];
    if (seat.you) tags.push("you");
    if (p === table.starter) tags.push("started");
    if (seat.quit) tags.push("quit");
    if (game && game.away && game.away.includes(p)) tags.push("away");
    if (game && game.left && game.left.includes(p)) tags.push(`left: ${seat.agent} plays`);
    const box = el("div", {
      class: `seat${p === table.current_player && !table.game_over ? " to-act" : ""}${seat.quit ? " out" : ""}`,
      "data-seat": String(p),
    },
    // (a long name is cut to two lines on screen: its title shows it whole; a screen reader reads the text whole)
    el("div", { class: "who" }, el("b", { title: seat.name }, ...breakable(seat.name)),
      el("span", { class: "kind", text: seat.person ? "person" : "agent" })),
    el("div", { class: "nums" }, el("span", { text: `score ${seat.score}` }),
      el("span", { text: `${seat.hand_size} card${seat.hand_size === 1 ? "" : "s"}` })),
    el("div", { class: "tags", text: tags.join(" · ") }));
    if (seat.hand && !seat.you) box.append(el("div", { class: "mini-hand" }, ...seat.hand.map((c) => cardFace(c, true))));
    if (canHandOver(p)) {
      box.append(el("button", {
        class: "hand-over", text: "Let heuristic play", "aria-label": `let heuristic play ${seat.name}'s seat`,
        "data-seat": String(p), onclick: () => handOver(p, seat.name),
      }));
    }
    return box;
  });
  $("seats").replaceChildren(...seats);
  if (refocus !== null) document.querySelector(`.hand-over[data-seat="${refocus}"]`)?.focus();
  $("pile").replaceChildren(cardFace(table.top_card, false));
  $("info").replaceChildren(
    el("div", { text: `Round ${table.round}` }),
    el("div", { class: "draw-count", text: `draw ${table.draw_pile}` }),
  );
  if (game && game.mode === "play") {
    const me = table.seats[game.seat];
    const mine = live && game.your_turn;
    drawHand(me && me.hand ? me.hand : [], mine ? new Set(game.legal) : new Set(), mine ? table : null);
  }
}

// The cards and moves of this page's hand, those in `legal` on; on its turn (`table` given)
// each one off says why, in its title (a tooltip, and the description a screen reader reads).
function drawHand(hand, legal, table) {
  const wait = table ? "" : !game || !ended() ? "not your turn" : game.game_over ? "the game is over" : "the game stopped";
  const buttons = hand.map((card) => {
    const b = el("button", { class: `card c${card}`, text: CARD(card), "data-action": String(card - 1), "aria-label": card === 7 ? "play a llama" : `play ${card}` });
    b.disabled = !legal.has(card - 1);
    if (!b.disabled) b.classList.add("legal");
    else b.title = wait || `cannot be played on ${TOP_NAME(table.top_card)}: only ${PLAYABLE_ON(table.top_card).map(CARD_NAME).join(" or ")}`;
    b.addEventListener("click", () => move(card - 1));
    return b;
  });
  $("hand").replaceChildren(...buttons);
  $("draw").disabled = !legal.has(7);
  $("draw").title = legal.has(7) ? "" : wait || `you cannot draw: ${noDraw(table)}`;
  $("quit").disabled = !legal.has(8);
  $("quit").title = legal.has(8) ? "" : wait;
}

// Why the player to move may not draw (rule 5).
function noDraw(table) {
  return table.draw_pile === 0 ? "the draw pile is empty" : "you are the last one in the round";
}

// The turn line on this page's turn: the cards it can play on the top card, whether it
// can draw, and why not ("Your turn: play a 3 or a 4 on the 3, draw, or quit.").
function yourTurnText() {
  const top = game.table.top_card;
  const legal = new Set(game.legal);
  const cards = PLAYABLE_ON(top).filter((c) => legal.has(c - 1));
  const draw = legal.has(7);
  const line = cards.length ?
    `Your turn: play ${cards.map(CARD_NAME).join(" or ")} on ${TOP_NAME(top)}, ${draw ? "draw, " : ""}or quit.` :
    `Your turn: ${draw ? "draw or quit" : "quit"}. You hold no ${PLAYABLE_ON(top).map(CARD_WORD).join(" or ")} to play on ${TOP_NAME(top)}.`;
  return draw ? line : `${line} You cannot draw: ${noDraw(game.table)}.`;
}

function showRound(event) {
  const names = event.table.seats.map((s) => s.name);
  const rows = event.scores.map((score, p) => {
    const change = event.penalties[p] ? `+${event.penalties[p]}` : event.returned[p] ? `−${event.returned[p]}` : "+0";
    const hand = event.hands[p].length ? el("span", { class: "mini-hand" }, ...event.hands[p].map((c) => cardFace(c, true))) : "—";
    return el("tr", { class: event.winners.includes(p) ? "winner" : "" },
      el("td", { text: names[p] }), el("td", {}, hand), el("td", { text: change }), el("td", { text: String(score) }));
  });
  const head = el("tr", {}, ...["player", "cards", "points", "score"].map((h) => el("th", { text: h })));
  $("round-body").replaceChildren(el("h3", { text: event.text }), el("table", {}, head, ...rows));
  $("round-result").classList.remove("hidden");
  openAtTop($("round-result"), $("round-ok"));
}

// A box just shown (the round's result) is read from its title: its Continue takes the
// focus without scrolling to it (focus() scrolled the box to its end), and the page
// scrolls as little as brings the box, at most the screen's height, into view.
function openAtTop(box, button) {
  button.focus({ preventScroll: true });
  box.scrollTop = 0;
  if ($("game").classList.contains("hidden")) return;  // (shown when the person comes back)
  box.scrollIntoView({ block: "nearest" });
}

function roundOpen() {
  return !$("round-result").classList.contains("hidden");
}

function closeRound() {
  const wasOpen = roundOpen();
  $("round-result").classList.add("hidden");
  if (!wasOpen || !game) return;
  if (queue.length && !animating) showNext();  // the next round's moves held for it
  // (its Continue button, now hidden, counts as no focus): back to the moves, or to Pause
  // while Play goes on, else Step
  if (game.mode === "play") focusMove();
  else [autoplay !== null ? $("pause") : $("step"), $("new-game")].find((b) => !b.disabled).focus({ preventScroll: true });
  focusEnd();
}

// After a move the buttons are drawn anew: the keyboard's focus goes to the first card
// that can be played, else Draw, else Quit (never while the person is elsewhere on the page).
function focusMove() {
  if (!focusLost() || !game || !game.your_turn || animating || roundOpen()) return;
  const target = document.querySelector("#hand button:enabled") || [$("draw"), $("quit")].find((b) => !b.disabled);
  if (target) target.focus();
}

// Whether the keyboard's focus is nowhere: on the page, or on a button gone, off or hidden.
function focusLost() {
  const active = document.activeElement;
  return !active || active === document.body || active.disabled || !active.isConnected || active.offsetParent === null;  // (hidden)
}

// A game over or stopped, its last result closed: the keyboard's focus, lost with the moves
// gone off (it fell to the page), goes to New game, without scrolling the page to it.
function focusEnd() {
  if (game && ended() && !queue.length && !roundOpen() && focusLost()) {
    $("new-game").focus({ preventScroll: true });
  }
}

// While moves are shown or a move is on its way. Step and Play stay on (a step asked for
// meanwhile is let go: see step): switched off, they dropped the keyboard's focus to the
// page, and the next Space stepped nothing.
function disableInput() {
  for (const b of document.querySelectorAll("#hand button, #draw, #quit, .hand-over")) b.disabled = true;
}

function render() {
  if (!game || queue.length) return;  // (moves still to show: the table shown is not the state at rest)
  drawTable(game.table, true);
  showTableWarnings(game.warnings || []);
  // an agent's failure stopped the game for good (a plugin's bug): the server says which agent, at which seat, and why
  if (game.stopped) $("game-error").textContent = game.stopped;
  if (game.mode === "play") {
    const waiting = game.table.seats[game.table.current_player].name;
    const me = game.table.seats[game.seat];
    const gone = me.person ? "" : `${me.agent} plays your seat now: you are watching.`;
    const nudge = ended() || game.your_turn || gone ? null : linkNudge(game.table.current_player);
    const line = game.game_over ? game.result : game.stopped ? "The game stopped." : game.your_turn ? yourTurnText() : gone ||
      `Waiting for ${waiting}…${nudge ? ` ${waiting} has not opened the link yet:` : ""}`;
    showTurn(line, game.your_turn);
    if (nudge) $("turn").append(" ", nudge);
    sayTurn($("turn").textContent);
    $("penalty").textContent = ended() ? "" : `Your hand would cost ${game.penalty} points now.`;
    $("penalty").style.visibility = "";
    focusMove();
  } else {
    const done = ended() || (game.mode === "replay" && game.moves_left === 0);
    $("step").disabled = done;
    $("play").disabled = done || autoplay !== null;
    $("pause").disabled = autoplay === null;
    if (done) stopAutoplay();
  }
  if (game.game_over) showStandings();
  const recordable = game.game_over || game.mode === "replay";
  $("download").classList.toggle("hidden", !recordable);
  $("leave").classList.toggle("hidden", !canLeave());
  navGame();
  askedStill();
  focusEnd();
}

// What the server says of the agents at this table (a model trained at other table sizes
// or rules, a search whose networks go unused here): they play all the same, and a person
// choosing them would want to know. Written again only when it changes.
function showTableWarnings(warnings) {
  const box = $("table-warnings");
  const text = warnings.join("\n");
  if (box.dataset.text === text) return;
  box.dataset.text = text;
  box.replaceChildren(...warnings.map((w) => el("p", { text: `Note: ${w}` })));
  box.classList.toggle("hidden", !warnings.length);
}

// The table waits for a person whose page has not come yet (game.joined: their link not
// opened), whose link this page holds (it started the game): they may not have it, and on a phone the links are out of sight below
// the table. A button leads to the link (its Copy button).
function linkNudge(p) {
  const row = $("invite-list").querySelector(`li[data-seat="${p}"]`);
  if (!row || game.joined.includes(p) || !game.table.seats[p].person) return null;
  return el("button", {
    class: "link send-link", text: "send the link",
    "aria-label": `go to ${game.table.seats[p].name}'s link, to send it`,
    onclick: () => {
      row.scrollIntoView({ block: "center" });
      row.querySelector("button").focus();
    },
  });
}

// A seat handed to an agent (a friend who never came) has no link left to send.
function fitInvites() {
  const rows = [...$("invite-list").children];
  for (const li of rows) li.classList.toggle("hidden", !game.table.seats[Number(li.dataset.seat)]?.person);
  $("invites").classList.toggle("hidden", !rows.some((li) => !li.classList.contains("hidden")));
}

function showStandings() {
  const rows = game.standings.map((s, i) => el("tr", { class: s.winner ? "winner" : "" },
    el("td", { text: String(i + 1) }), el("td", { text: s.left ? `${s.name} (left)` : s.name }), el("td", { text: String(s.score) })));
  const head = el("tr", {}, ...["#", "player", "score"].map((h) => el("th", { text: h })));
  const unsaved = el("p", { id: "not-saved", class: "error hidden", role: "alert", text: NOT_SAVED });
  $("standings").replaceChildren(el("h3", { text: "Final standings" }), el("p", { text: game.result }), el("table", {}, head, ...rows), unsaved);
  $("standings").classList.remove("hidden");
  if (game.mode !== "replay" && !game.saving && game.history_id === null) {
    const id = game.id;
    keepsHistory().then((kept) => { if (kept && game && game.id === id) unsaved.classList.remove("hidden"); });
  }
}

// A finished game that the server did not save (it says history_id null once the save is
// done: saving false) is said so on the page, where the server keeps a history at all.
const NOT_SAVED = "This game was not saved to the history: the server could not save it (its log says why).";
let historyKept = null;  // the answer (a promise) to whether the server keeps a history: asked once

function keepsHistory() {
  if (historyKept === null) {
    historyKept = api("GET", "/api/history?limit=1").then(() => true, (err) => {
      if (err.status !== 404) historyKept = null;  // not known now: say nothing, ask again next time
      return false;  // (404: --no-history)
    });
  }
  return historyKept;
}

// ------------------------------------------------------------------ acting

async function move(action) {
  if (animating || queue.length || !game || !game.your_turn) return;
  window.llamaIdle = false;
  disableInput();
  showTurn("Sending your move…");
  stopPolling();
  $("game-error").textContent = "";
  $("round-result").classList.add("hidden");
  try {
    receive(await api("POST", `/api/games/${game.id}/move`, { action, since: game.seq }));
  } catch (err) {
    // the game may have moved on (another tab): catch up
    if (err.status === 409 && game.mode === "play" && await caughtUp()) {
      $("game-error").textContent = "The game had moved on since this page last looked: here is where it stands.";
      return;
    }
    $("game-error").textContent = err.message;
    render();
    window.llamaIdle = true;
    schedulePoll();
  }
}

// After a request the server refused (4xx), the page may be behind: another tab moved,
// another person left or handed a seat over. It asks for the game again and shows what it
// missed (true), or at least who is away and whether it may leave, as the server has them.
async function caughtUp() {
  const id = game.id;
  try {
    const state = await api("GET", `/api/games/${id}?since=${game.seq}`);
    if (!game || game.id !== id) return true;  // (another game was opened meanwhile)
    if (state.seq !== game.seq) {
      receive(state);
      return true;
    }
    adopt(state);
  } catch (again) { /* say the first error */ }
  return false;
}

// Asks before a step that cannot be undone, in the page: window.confirm would stop the
// page (its polling too, so the table could take it for away) until answered. The answer:
// true (yes), false (no, Escape, or the page went elsewhere), or LAPSED once `still()`
// stops holding (the seat's person came back meanwhile, say): the caller says what that
// means, no for a hand-over, yes for leaving a seat that is no longer this page's.
const LAPSED = "lapsed";
let asking = null;

function ask(question, yes, still) {
  if (asking) asking.answer(false);
  $("ask-text").textContent = question;
  $("ask-yes").textContent = yes;
  return new Promise((resolve) => {
    asking = {
      still,
      answer(yes) {
        asking = null;
        if ($("ask").open) $("ask").close();
        resolve(yes);
      },
    };
    $("ask").showModal();
  });
}

function askedStill() {
  if (asking && !asking.still()) asking.answer(LAPSED);
}

// Hands `seat` over once the person says yes, while `can()` still holds for this game.
async function askThenHandOver(seat, question, yes, can) {
  if (animating || queue.length || !game || !can()) return;
  const id = game.id;
  const still = () => Boolean(game && game.id === id && !animating && !queue.length && can());
  if ((await ask(question, yes, still)) === true && still()) await sendHandOver(seat);
}

function handOver(seat, name) {
  const question = `Let heuristic play ${name}'s seat from now on? ${name}'s link will only watch.`;
  return askThenHandOver(seat, question, "Let heuristic play", () => canHandOver(seat));
}

// Leaving while another person plays on (the server says when: game.can_leave): heuristic
// takes this page's seat, and the history counts the game as lost for this person.
function canLeave() {
  return Boolean(game && game.mode === "play" && game.can_leave);
}

function leaveTable() {
  if (!game) return;
  const question = "Leave the table? heuristic plays your seat from now on, and your game history counts the game as lost.";
  return askThenHandOver(game.seat, question, "Leave", canLeave);
}

async function sendHandOver(seat) {
  window.llamaIdle = false;
  disableInput();
  showTurn(seat === game.seat ? "Leaving the table…" : `Handing ${game.table.seats[seat].name}'s seat to heuristic…`);
  stopPolling();
  $("game-error").textContent = "";
  try {
    receive(await api("POST", `/api/games/${game.id}/hand-over`, { seat, since: game.seq }));
  } catch (err) {
    $("game-error").textContent = err.message;  // (why, over what the page missed: see caughtUp)
    if (err.status >= 400 && err.status < 500 && await caughtUp()) return;
    render();
    window.llamaIdle = true;
    schedulePoll();
  }
}

let stepping = false;  // a step is on its way to the server

async function step() {
  if (!game || ended() || animating || stepping) return;
  stepping = true;
  window.llamaIdle = false;
  $("round-result").classList.add("hidden");  // a watched game goes on: the result gives way
  $("game-error").textContent = "";
  try {
    const id = game.id;
    const state = await api("POST", `/api/games/${id}/step`, { moves: 1, since: game.seq });
    stepping = false;
    if (game && game.id === id) receive(state);  // (not when another game was opened meanwhile)
  } catch (err) {
    stepping = false;
    $("game-error").textContent = err.message;
    stopAutoplay();
    window.llamaIdle = true;
  }
}

// Another person's move reaches this page by polling while it waits for its turn. On its
// own turn it looks every 15 s: that keeps the game from being forgotten as idle, and
// catches a move made for this seat in another tab; every 3 s while another person is at
// the table, who may leave or hand a seat over meanwhile (and whose coming lets this
// page leave). A request that does not reach the
// server, or that the server cannot answer now (5xx, 429: busy, restarting), is tried
// again, less and less often, and the page says so; a game the server refuses this page
// (403, 404: forgotten, another token) stops the polling.
const LOST = "The connection to the server is lost: trying again…";
const BUSY = "The server cannot answer now: trying again…";

function passing(status) {
  return status === undefined || status === 429 || status >= 500;
}

function schedulePoll() {
  stopPolling();
  // (a game just over is asked for until the server has saved it: another page ended it)
  if (!game || game.mode !== "play" || game.stopped || (game.game_over && !game.saving)) return;
  const others = game.table.seats.some((s, p) => p !== game.seat && s.person);  // (who may leave, or hand a seat over)
  const wait = pollFailures ? Math.min(1000 * 2 ** pollFailures, 15000) : !game.your_turn ? 600 : others ? 3000 : 15000;
  poller = setTimeout(async () => {
    poller = null;
    if (animating || !game) return;
    const id = game.id, seq = game.seq, seat = game.seat;
    try {
      const state = await api("GET", `/api/games/${id}?since=${seq}`);
      // another game or seat was opened meanwhile, or a move or hand-over answered first
      if (!game || game.id !== id || game.seat !== seat || game.seq !== seq) { schedulePoll(); return; }
      if (pollFailures) {
        pollFailures = 0;
        if ([LOST, BUSY].includes($("game-error").textContent)) $("game-error").textContent = "";
      }
      if (state.events.length || state.seq !== game.seq) { window.llamaIdle = false; receive(state); return; }
      const unevented = (s) => [s.away, s.joined, s.can_leave, s.saving].map(String).join("|");
      if (unevented(state) !== unevented(game)) {
        adopt(state);  // who is away or came, whether this page may leave, the save: shown without an event
        render();
      }
    } catch (err) {
      if (!passing(err.status)) { $("game-error").textContent = err.message; return; }
      pollFailures += 1;
      $("game-error").textContent = err.status === undefined ? LOST : BUSY;
    }
    schedulePoll();
  }, wait);
}

function stopPolling() {
  if (poller !== null) clearTimeout(poller);
  poller = null;
}

// Play steps on by itself, and waits at each round's result until it is closed (Continue
// or Escape): it went on at once, and the result was gone before it could be read.
function playAuto() {
  if (autoplay !== null) return;
  const tick = async () => {
    if (!game || ended() || (game.mode === "replay" && game.moves_left === 0)) { stopAutoplay(); render(); return; }
    if (!animating && !roundOpen()) await step();
    if (autoplay === null) return;  // paused while the step was on its way
    autoplay = setTimeout(tick, delay());
  };
  autoplay = setTimeout(tick, 0);
  $("pause").disabled = false;
  if (document.activeElement === $("play")) $("pause").focus();  // (Play goes off: the keyboard's focus is not dropped)
  $("play").disabled = true;
}

function stopAutoplay() {
  if (autoplay !== null) clearTimeout(autoplay);
  autoplay = null;
  if (game && !animating) $("play").disabled = ended();
  // Pause goes off with nothing playing (it looked on at a replay's end): its focus goes to Play
  const paused = document.activeElement === $("pause");
  $("pause").disabled = true;
  if (paused) [$("play"), $("step"), $("new-game")].find((b) => !b.disabled).focus({ preventScroll: true });
}

async function download() {
  try {
    const record = await (await send("GET", `/api/games/${game.id}/record`)).text();
    const url = URL.createObjectURL(new Blob([record], { type: "application/json" }));
    const a = el("a", { href: url, download: "llama-game.json" });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  } catch (err) {
    $("game-error").textContent = err.message;
  }
}

// ------------------------------------------------------------------ history

async function showHistory(more) {
  stopAutoplay();  // (a game this page plays in is still asked for: see seated)
  show("history");
  goTo(viewHash("history"));
  $("history-error").textContent = "";
  historyOffset = more ? historyOffset + 50 : 0;
  if (!more) historyShown = new Set();
  try {
    const data = await api("GET", `/api/history?limit=50&offset=${historyOffset}`);
    $("history-count").textContent = `${data.count} game${data.count === 1 ? "" : "s"} saved.`;
    const rhead = el("tr", {}, ...["#", "name", "kind", "games", "wins", "win share", "rating", "mu ± σ"].map((h) => el("th", { text: h })));
    // an agent rated under several versions (an upgrade may change what it plays) shows which
    const versions = {};
    for (const r of data.ratings) versions[`${r.kind}:${r.name}`] = (versions[`${r.kind}:${r.name}`] || 0) + 1;
    const shown = (r) => (versions[`${r.kind}:${r.name}`] > 1 ? `${r.name} (${r.version || "version unknown"})` : r.name);
    $("ratings").replaceChildren(rhead, ...data.ratings.map((r, i) => el("tr", {},
      el("td", { text: String(i + 1) }), el("td", { text: shown(r) }), el("td", { class: "kind", text: r.kind }),
      el("td", { text: String(r.games) }), el("td", { text: String(r.wins) }),
      el("td", { text: r.win_share.toFixed(3) }), el("td", { text: r.ordinal.toFixed(1) }),
      el("td", { text: `${r.mu.toFixed(1)} ± ${r.sigma.toFixed(1)}` }))));
    await rulesLoaded;  // (the words for a game's options)
    const ghead = el("tr", {}, ...["finished", "rules", "players (score)", ""].map((h) => el("th", { text: h })));
    const rules = (g) => changedRules(g.options);
    // games finished since the list opened push the older ones down: those listed already are not repeated
    const fresh = data.games.filter((g) => !historyShown.has(g.id));
    for (const g of fresh) historyShown.add(g.id);
    const rows = fresh.map((g) => el("tr", {},
      el("td", { text: new Date(g.finished).toLocaleString() }),
      el("td", { class: rules(g) ? "rules" : "rules kind", text: rules(g) || "standard" }),
      el("td", {}, ...g.seats.flatMap((s, p) => [p ? ", " : "", el("span", { class: s.winner ? "winner" : "" }, `${s.name} (${s.score}${s.forfeit ? ", left" : ""})`)])),
      el("td", {}, el("button", {
        text: "Replay", class: "replay", "data-game": String(g.id), onclick: () => replaySaved(g.id),
        "aria-label": `replay the game finished ${new Date(g.finished).toLocaleString()}`,
      }))));
    if (more) $("games").append(...rows); else $("games").replaceChildren(ghead, ...rows);
    $("history-more").classList.toggle("hidden", historyOffset + data.games.length >= data.count);
  } catch (err) {
    $("history-error").textContent = err.message;
  }
}

async function replaySaved(id) {
  if (!(await leaveSeatFor("Open the replay", "Open the replay"))) return;
  try {
    const state = await api("POST", `/api/history/${id}/replay`, {});
    token = state.token;
    goTo(gameHash(state.id, token));
    begin(state);
  } catch (err) {
    $("history-error").textContent = err.message;
  }
}

// ------------------------------------------------------------------ wiring

$("players").addEventListener("change", () => { seatRows(); fitRuleFields(); });
$("start").addEventListener("click", start);
$("replay-file").addEventListener("change", replayFile);
$("draw").addEventListener("click", () => move(7));
$("quit").addEventListener("click", () => move(8));
$("step").addEventListener("click", step);
$("play").addEventListener("click", playAuto);
$("pause").addEventListener("click", stopAutoplay);
$("speed").addEventListener("input", keepSpeed);
$("round-ok").addEventListener("click", closeRound);
document.addEventListener("keydown", (event) => {  // (not a result the history or the form hides)
  if (event.key === "Escape" && !$("game").classList.contains("hidden")) closeRound();
});
$("download").addEventListener("click", download);
$("history-more").addEventListener("click", () => showHistory(true));
$("nav-history").addEventListener("click", () => showHistory(false));  // (an entry of its own: see goTo)
// The new-game form. A game this page plays in goes on (its polling too), and "Back to
// the game" returns to it; any other is let go.
function toSetup() {
  if (asking) asking.answer(false);
  stopAutoplay();
  if (!seated()) {
    stopPolling();
    token = null;
    game = null;
  }
  show("setup");
  offerKeptGames();
}

// (an entry of its own, which keeps a seat's link while the page plays there: see goTo)
const newGame = () => {
  toSetup();
  goTo(viewHash("setup"));
};
$("new-game").addEventListener("click", newGame);
$("leave").addEventListener("click", leaveTable);
$("ask-yes").addEventListener("click", () => asking?.answer(true));
$("ask-no").addEventListener("click", () => asking?.answer(false));
$("ask").addEventListener("close", () => asking?.answer(false));  // Escape closes it too
$("nav-new").addEventListener("click", newGame);
$("resume-more").addEventListener("click", () => offerKeptGames(true));
$("nav-game").addEventListener("click", () => {
  goTo(viewHash("game"));
  show("game");  // (this button hides: the focus goes to the result shown, else to the moves)
  if (roundOpen()) openAtTop($("round-result"), $("round-ok")); else focusMove();
});
// A game link pasted into a tab already open, or the browser's Back and Forward: the
// entry's view (the game this page follows is shown as it stands), or the new-game form
// for an entry without one. The same on opening the page.
// An entry of the history or the form that names a seat follows that game behind it, as
// the page that made the entry did.
async function route() {
  if (asking) asking.answer(false);  // (before another game is opened: its seat would lapse the question)
  const params = new URLSearchParams(location.hash.slice(1));
  const view = params.has("history") ? "history" : params.has("new") ? "setup" : "game";
  const id = params.get("game"), seatToken = params.get("token");
  const followed = Boolean(game && id === game.id && seatToken === token);
  if (view === "game") {
    if (followed) show("game");
    else if (id && seatToken) await openLink(id, seatToken);
    else toSetup();
    return;
  }
  if (id && seatToken && !followed) await openLink(id, seatToken, true);
  if (view === "history") {
    goTo(viewHash("history"), true);  // (the seat's link: kept, or gone with a game no longer played)
    showHistory(false);
  } else {
    toSetup();
    goTo(viewHash("setup"), true);
  }
}

// The games this browser started that go on (their links kept: see keepInvites), offered
// on the new-game form: the page that started one may have been closed. Each is asked
// for with its creator's token, without its events (since: a frame no game reaches),
// newest first, until OFFERED are found (each request counts as the seat's page being
// there, so not all 20 on every view of the form); "More of your games" asks for the
// rest. A game the server no longer holds is forgotten here too, one over or whose seat
// an agent now plays is not asked for again, and one this browser has not had open for
// KEPT_FOR is let go unasked: its seat has been away that long, so the others have handed
// it over, or the server forgot the game (after 30 minutes without a request by default).
// The list is shared by this browser's tabs (another tab's seat is offered too): each
// offer names its seat.
const OFFERED = 3;
const KEPT_FOR = 24 * 3600 * 1000;
let offers = 0;

async function offerKeptGames(all = false) {
  const asked = ++offers;
  const followed = game ? game.id : null;
  const now = Date.now();
  const kept = keptInvites();
  const fresh = kept.filter((g) => now - (g.seen || g.started || 0) < KEPT_FOR);
  if (fresh.length < kept.length) writeInvites(fresh);  // a game not opened here for a day: forgotten
  const waiting = fresh.filter((g) => g.id !== followed && !g.done).reverse();  // newest first
  const going = [];
  while (waiting.length && (all || going.length <= OFFERED)) {
    const found = await Promise.all(waiting.splice(0, OFFERED + 1).map(async (kept) => {
      try {
        return { kept, state: await api("GET", `/api/games/${encodeURIComponent(kept.id)}?since=1000000000`, undefined, kept.token) };
      } catch (err) {
        if (err.status === 404) forgetInvites(kept.id);
        return null;
      }
    }));
    for (const f of found.filter(Boolean)) {
      const { kept, state } = f;
      if (state.mode === "play" && !ended(state) && state.table.seats[state.seat].person) {
        markInvites(kept.id, { seen: Date.now() });
        going.push(f);
      } else {
        markInvites(kept.id, { done: true });
      }
    }
    if (asked !== offers) return;  // a later call answers
  }
  const more = !all && going.length > OFFERED;
  $("resume-list").replaceChildren(...going.slice(0, more ? OFFERED : undefined).map(({ kept, state }) => {
    const seats = state.table.seats;
    const me = seats[state.seat].name;
    const others = seats.filter((s, p) => p !== state.seat).map((s) => s.name);
    const turn = state.your_turn ? `, ${me}'s turn` : "";
    const when = kept.started ? `, started ${new Date(kept.started).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" })}` : "";
    return el("li", {}, el("button", {
      class: "resume", "data-game": kept.id,
      text: `Back to ${me}'s seat at the game with ${namesText(others)}${when} (round ${state.table.round}${turn})`,
      onclick: () => resumeKept(kept),
    }));
  }));
  $("resume-more").classList.toggle("hidden", !more);
  $("resume").classList.toggle("hidden", going.length === 0);
}

function namesText(names) {
  return names.length === 1 ? names[0] : `${names.slice(0, -1).join(", ")} and ${names[names.length - 1]}`;
}

async function resumeKept(kept) {
  if (!(await leaveSeatFor("Open that game", "Open it"))) return;
  goToGame(kept.id, kept.token);
  route();
}

window.addEventListener("hashchange", route);
seatRows();
loadAgents();
loadRules();
route();
