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

function showError(message) {
  document.getElementById("error").textContent = message || "";
}

function setStatus(text) {
  document.getElementById("status").textContent = text;
  document.body.dataset.version = String(table.version);
}

async function post(path, body) {
  showError("");
  try {
    const response = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body) });
    const reply = await response.json();
    if (!response.ok) showError(reply.error || response.statusText);
    return response.ok;
  } catch (error) {
    showError(String(error));
    return false;
  }
}

// MARK: Elements

function makeRowElement(row) {
  const li = document.createElement("li");
  li.className = "team";
  li.innerHTML = '<span class="flag"></span><span class="name"></span><span class="wins"></span><button type="button" class="delete" title="Delete">Delete</button>';
  li.addEventListener("click", () => post("/api/teams/win", { id: li.dataset.id }));
  li.querySelector(".delete").addEventListener("click", (event) => {
    event.stopPropagation();
    post("/api/teams/delete", { id: li.dataset.id });
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
  li.querySelector(".flag").textContent = row.flag;
  li.querySelector(".wins").textContent = row.wins === 1 ? "1 win" : `${row.wins} wins`;
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

document.getElementById("add-team").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const field = (name) => form.elements.namedItem(name).value;
  if (await post("/api/teams", { name: field("name"), zone: field("zone") })) form.reset();
});

connect();
