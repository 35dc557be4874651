"use strict";
// The live World Cup table. The server's fetched results controller sends the whole table when the
// page connects, then one batch of changes per save; a batch is applied with UITableView's batch
// rules: deletes (sections and rows) and move sources use the old index paths, inserts and move
// destinations the new ones, reloads the old ones. The list's elements are kept and moved, never
// rebuilt.

const table = { sections: [], version: -1, batchesApplied: 0 };
window.worldCupTable = table;
const container = document.getElementById("table");
const rowElements = new Map(); // team ID -> <li>
let sectionElements = [];       // parallel to table.sections
let socket = null;

// The error shown, and a check of whether it is still true; it is checked again whenever the
// table or the form changes, and cleared once it no longer holds.
let shownError = null;

function showError(message, stillTrue = () => true) {
  shownError = message ? { message, stillTrue } : null;
  document.getElementById("error").textContent = message || "";
}

function recheckError() {
  if (shownError && !shownError.stillTrue()) showError("");
}

function hasTeam(name) {
  const wanted = name.trim().toLowerCase();
  return table.sections.some((section) => section.rows.some((row) => row.name.toLowerCase() === wanted));
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
  document.body.dataset.version = String(table.version);
}

/// Posts a change; a refusal is shown while `stillTrue(message)` holds, a failure to reach the
/// server until the page is connected again.
async function post(path, body, stillTrue = () => true) {
  showError("");
  try {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const reply = await response.json();
    if (!response.ok) {
      const message = reply.error || response.statusText;
      showError(message, () => stillTrue(message));
    }
    return response.ok;
  } catch (error) {
    showError(`The server can't be reached (${error.message || error}).`, () => !socket || socket.readyState !== WebSocket.OPEN);
    return false;
  }
}

/// A refusal about one team is moot once the team's row is gone from the page.
function whileRowShown(id) {
  return () => rowElements.has(id);
}

// MARK: Elements

function makeRowElement(row) {
  const li = document.createElement("li");
  li.className = "team";
  li.innerHTML = '<span class="flag"></span><span class="name"></span><span class="wins"></span><button type="button" class="delete" title="Delete">Delete</button>';
  li.addEventListener("click", () => post("/api/teams/win", { id: li.dataset.id }, whileRowShown(li.dataset.id)));
  li.querySelector(".delete").addEventListener("click", (event) => {
    event.stopPropagation();
    post("/api/teams/delete", { id: li.dataset.id }, whileRowShown(li.dataset.id));
  });
  fillRowElement(li, row);
  rowElements.set(row.id, li);
  return li;
}

function fillRowElement(li, row) {
  li.dataset.id = row.id;
  li.dataset.name = row.name;
  li.dataset.wins = String(row.wins);
  li.querySelector(".name").textContent = row.name;
  renderFlag(li.querySelector(".flag"), row);
  li.querySelector(".wins").textContent = row.wins === 1 ? "1 win" : `${row.wins} wins`;
}

const svgNamespace = "http://www.w3.org/2000/svg";

/// Puts the flags' sprite (`/flags.svg`, a symbol per seed team) into the page.
async function loadFlags() {
  try {
    const response = await fetch("/flags.svg");
    if (!response.ok) return;
    const holder = document.createElement("div");
    holder.hidden = true;
    holder.innerHTML = await response.text();
    document.body.appendChild(holder);
  } catch (error) {
    console.error("no flags", error); // every team then shows its initial
  }
}

/// The team's flag from the sprite, or, for a team the sprite has no flag for (one added on the
/// page), its initial on a plain flag.
function renderFlag(span, row) {
  if (span.dataset.flag === row.flag && span.dataset.name === row.name) return;
  span.dataset.flag = row.flag;
  span.dataset.name = row.name;
  span.textContent = "";
  const svg = document.createElementNS(svgNamespace, "svg");
  svg.setAttribute("viewBox", "0 0 30 20");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", `${row.name} flag`);
  span.classList.remove("plain");
  if (row.flag && document.getElementById(row.flag) instanceof SVGSymbolElement) {
    const use = document.createElementNS(svgNamespace, "use");
    use.setAttribute("href", `#${row.flag}`);
    svg.appendChild(use);
  } else {
    const initial = document.createElementNS(svgNamespace, "text");
    initial.setAttribute("x", "15");
    initial.setAttribute("y", "14.5");
    initial.setAttribute("text-anchor", "middle");
    initial.textContent = (row.name || "?").trim().charAt(0).toUpperCase();
    svg.appendChild(initial);
    span.classList.add("plain");
  }
  span.appendChild(svg);
}

function makeSectionElement(name) {
  const section = document.createElement("section");
  section.className = "zone";
  section.dataset.zone = name;
  section.innerHTML = "<h2></h2><ul></ul>";
  section.querySelector("h2").textContent = name || "(no zone)";
  return section;
}

/// Puts `elements` in this order among `parent`'s children, moving only those out of place and
/// skipping children that are leaving.
function placeInOrder(parent, elements) {
  let reference = parent.firstElementChild;
  for (const element of elements) {
    while (reference && reference.classList.contains("leaving")) reference = reference.nextElementSibling;
    if (reference === element) { reference = reference.nextElementSibling; continue; }
    parent.insertBefore(element, reference);
  }
}

function leave(element) {
  element.classList.add("leaving");
  setTimeout(() => element.remove(), 300);
}

function flash(element, className) {
  element.classList.remove(className);
  void element.offsetWidth; // restart the animation
  element.classList.add(className);
}

function updateZoneList() {
  const list = document.getElementById("zones");
  list.innerHTML = "";
  for (const section of table.sections) {
    const option = document.createElement("option");
    option.value = section.name;
    list.appendChild(option);
  }
}

function renderSectionCounts() {
  table.sections.forEach((section, index) => {
    const teams = section.rows.length === 1 ? "1 team" : `${section.rows.length} teams`;
    sectionElements[index].querySelector("h2").dataset.count = teams;
  });
}

// MARK: Whole table

function showState(message) {
  container.innerHTML = "";
  rowElements.clear();
  table.sections = message.sections;
  table.version = message.version;
  sectionElements = message.sections.map((section) => {
    const element = makeSectionElement(section.name);
    const list = element.querySelector("ul");
    for (const row of section.rows) list.appendChild(makeRowElement(row));
    container.appendChild(element);
    return element;
  });
  renderSectionCounts();
  updateZoneList();
  setStatus(`live · ${table.sections.reduce((n, s) => n + s.rows.length, 0)} teams`);
  recheckError();
}

// MARK: One batch, with UITableView's rules

function key(path) { return `${path.section}.${path.row}`; }

function applyBatch(changes) {
  const old = table.sections;
  const deletedSections = new Set();
  const insertedSections = [];
  const deletedRows = new Set();
  const movedOut = new Set();
  const arriving = [];
  const reloaded = new Map();
  for (const change of changes) {
    const [kind, body] = Object.entries(change)[0];
    switch (kind) {
      case "deleteSection": deletedSections.add(body.section); break;
      case "insertSection": insertedSections.push(body); break;
      case "deleteRow": deletedRows.add(key(body.at)); break;
      case "insertRow": arriving.push({ path: body.at, row: body.row, kind }); break;
      case "moveRow": movedOut.add(key(body.from)); arriving.push({ path: body.to, row: body.row, kind }); break;
      case "reloadRow": reloaded.set(body.row.id, body.row); break;
      default: throw new Error(`unknown change ${kind}`);
    }
  }
  // The sections after the batch: survivors in order, then inserted ones at their new indexes.
  const next = [];
  old.forEach((section, index) => { if (!deletedSections.has(index)) next.push({ name: section.name, oldIndex: index, element: sectionElements[index] }); });
  for (const inserted of insertedSections.sort((a, b) => a.section - b.section)) {
    if (inserted.section > next.length) throw new Error(`section insert at ${inserted.section} out of range`);
    next.splice(inserted.section, 0, { name: inserted.name, oldIndex: null, element: null });
  }
  // The rows of each section: arriving rows at their new indexes, the stayers filling the rest in order.
  const sections = next.map((section, sectionIndex) => {
    const stayers = section.oldIndex === null ? [] : old[section.oldIndex].rows.filter((_, row) => {
      const path = `${section.oldIndex}.${row}`;
      return !deletedRows.has(path) && !movedOut.has(path);
    });
    const incoming = arriving.filter((a) => a.path.section === sectionIndex).sort((a, b) => a.path.row - b.path.row);
    const rows = new Array(stayers.length + incoming.length).fill(null);
    for (const a of incoming) {
      if (a.path.row >= rows.length) throw new Error(`row ${key(a.path)} out of range`);
      rows[a.path.row] = a.row;
    }
    let s = 0;
    for (let i = 0; i < rows.length; i++) if (rows[i] === null) rows[i] = stayers[s++];
    return { name: section.name, rows: rows.map((row) => reloaded.get(row.id) || row) };
  });

  // The elements: remember where rows were, for the move animation.
  const before = new Map();
  for (const [id, element] of rowElements) before.set(id, element.getBoundingClientRect().top);
  const keptIDs = new Set(sections.flatMap((section) => section.rows.map((row) => row.id)));
  for (const [id, element] of [...rowElements]) {
    if (!keptIDs.has(id)) { rowElements.delete(id); leave(element); }
  }
  old.forEach((_, index) => { if (deletedSections.has(index)) leave(sectionElements[index]); });
  const arrivingKinds = new Map(arriving.map((a) => [a.row.id, a.kind]));
  sectionElements = next.map((section) => {
    if (section.element) return section.element;
    const element = makeSectionElement(section.name);
    flash(element, "entering");
    return element;
  });
  placeInOrder(container, sectionElements);
  sections.forEach((section, index) => {
    const list = sectionElements[index].querySelector("ul");
    const elements = section.rows.map((row) => {
      const existing = rowElements.get(row.id);
      if (!existing) {
        const element = makeRowElement(row);
        flash(element, "entering");
        return element;
      }
      fillRowElement(existing, row);
      if (reloaded.has(row.id) || arrivingKinds.get(row.id) === "moveRow") flash(existing, "changed");
      return existing;
    });
    placeInOrder(list, elements);
  });
  // Moved rows slide from where they were.
  for (const [id, kind] of arrivingKinds) {
    const element = rowElements.get(id);
    if (kind !== "moveRow" || !element || !before.has(id)) continue;
    const offset = before.get(id) - element.getBoundingClientRect().top;
    if (offset !== 0) element.animate([{ transform: `translateY(${offset}px)` }, { transform: "none" }], { duration: 300, easing: "ease-out" });
  }
  table.sections = sections;
  table.batchesApplied += 1;
  renderSectionCounts();
  updateZoneList();
  recheckError();
}

// MARK: Connection

function connect() {
  setStatus("connecting…");
  socket = new WebSocket(`${location.protocol === "https:" ? "wss" : "ws"}://${location.host}/ws`);
  socket.onmessage = (event) => {
    const message = JSON.parse(event.data);
    if (message.state) return showState(message.state);
    const batch = message.batch;
    if (!batch) return;
    if (batch.version !== table.version + 1) {
      console.error(`batch ${batch.version} after version ${table.version}; reconnecting`);
      return socket.close();
    }
    try {
      applyBatch(batch.changes);
      table.version = batch.version;
      setStatus(`live · ${table.sections.reduce((n, s) => n + s.rows.length, 0)} teams`);
    } catch (error) {
      console.error(error);
      socket.close();
    }
  };
  socket.onclose = () => {
    setStatus("disconnected; reconnecting…");
    setTimeout(connect, 1000);
  };
}

const addForm = document.getElementById("add-team");
addForm.addEventListener("submit", async (event) => {
  event.preventDefault();
  const field = (name) => addForm.elements.namedItem(name).value;
  const sent = { name: field("name"), zone: field("zone") };
  // A refusal holds while the form still says what was refused and, for a name already taken,
  // while a team of that name is in the table.
  const stillTrue = (message) => field("name") === sent.name && field("zone") === sent.zone
    && (!message.includes("already exists") || hasTeam(sent.name));
  if (await post("/api/teams", sent, stillTrue)) addForm.reset();
});
addForm.addEventListener("input", recheckError);

loadFlags().then(connect);
