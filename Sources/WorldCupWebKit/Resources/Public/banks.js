"use strict";
// The Failed Banks list: the server's fetched results controller (fetchBatchSize 20) holds the
// order; the page asks for the rows of the chunks of 20 it shows as the user scrolls, and keeps
// only the visible rows in the document.

const ROW_HEIGHT = 24;
const started = performance.now();
const viewport = document.getElementById("viewport");
const spacer = document.getElementById("spacer");
const banks = { count: 0, chunk: 20, loaded: new Map(), pending: new Set(), firstScreenMs: null, requests: 0 };
window.failedBanks = banks;
const shown = new Map(); // index -> element

function chunkRange() {
  const first = Math.floor(viewport.scrollTop / ROW_HEIGHT);
  const last = Math.min(banks.count - 1, Math.ceil((viewport.scrollTop + viewport.clientHeight) / ROW_HEIGHT));
  return [first, last];
}

async function load(chunk) {
  if (banks.loaded.has(chunk) || banks.pending.has(chunk)) return;
  banks.pending.add(chunk);
  banks.requests += 1;
  try {
    const response = await fetch(`/api/banks?start=${chunk * banks.chunk}&count=${banks.chunk}`);
    const rows = await response.json();
    if (!response.ok) throw new Error(rows.error || response.statusText);
    banks.loaded.set(chunk, rows);
  } catch (error) {
    document.getElementById("status").textContent = String(error);
  } finally {
    banks.pending.delete(chunk);
  }
  render();
}

function rowElement(index) {
  const element = document.createElement("div");
  element.className = "bank placeholder";
  element.style.top = `${index * ROW_HEIGHT}px`;
  element.innerHTML = '<span class="index"></span><span class="date"></span><span class="name"></span><span class="city"></span><span class="state"></span><span class="zip"></span>';
  element.querySelector(".index").textContent = String(index + 1);
  return element;
}

function fill(element, bank) {
  element.classList.remove("placeholder");
  element.querySelector(".date").textContent = bank.closeDate;
  element.querySelector(".name").textContent = bank.name;
  element.querySelector(".city").textContent = bank.city;
  element.querySelector(".state").textContent = bank.state;
  element.querySelector(".zip").textContent = bank.zip ? String(bank.zip) : "";
}

function render() {
  if (banks.count === 0) return;
  const [first, last] = chunkRange();
  for (const [index, element] of shown) {
    if (index < first - 10 || index > last + 10) { element.remove(); shown.delete(index); }
  }
  let complete = true;
  for (let index = first; index <= last; index++) {
    let element = shown.get(index);
    if (!element) { element = rowElement(index); spacer.appendChild(element); shown.set(index, element); }
    const rows = banks.loaded.get(Math.floor(index / banks.chunk));
    const bank = rows && rows[index % banks.chunk];
    if (bank) { if (element.classList.contains("placeholder")) fill(element, bank); } else complete = false;
  }
  for (let chunk = Math.floor(first / banks.chunk); chunk <= Math.floor(last / banks.chunk); chunk++) load(chunk);
  if (complete && banks.firstScreenMs === null) {
    banks.firstScreenMs = Math.round(performance.now() - started);
    document.body.dataset.firstScreenMs = String(banks.firstScreenMs);
  }
  document.getElementById("status").textContent =
    `${banks.count.toLocaleString("en-US")} banks, sorted by closing date · rows ${first + 1}–${last + 1}`;
}

async function start() {
  const info = await (await fetch("/api/banks/info")).json();
  banks.count = info.count;
  banks.chunk = info.batchSize;
  spacer.style.height = `${banks.count * ROW_HEIGHT}px`;
  viewport.addEventListener("scroll", render, { passive: true });
  window.addEventListener("resize", render);
  render();
}

start();
