// Items opened are marked read in batches, one POST /items/mark-read for many, so that reading
// quickly with j/k costs one request per item (its content), not two, and stays well inside the
// per-user rate limit (F25). The queue is flushed within a moment, before any listing loads,
// and when the page goes away.

import { app } from './state.js';
import { api } from './api.js';
import { showError } from './dialogs.js';
import { t } from './i18n.js';

const READ_BATCH_DELAY_MS = 1500;
const READ_BATCH_MAX = 100;
const pendingReads = new Map(); // item id -> { item, list }
const sentReads = new Map(); // item id -> the answer of the batch sent with it
let pendingReadsTimer = null;

/** Sends the queued "read" marks now; rolls them back with a message if the server refuses. */
export async function flushPendingReads() {
  clearTimeout(pendingReadsTimer);
  pendingReadsTimer = null;
  if (pendingReads.size === 0) return;
  const batch = [...pendingReads.values()];
  pendingReads.clear();
  const ids = batch.map((entry) => entry.item.id);
  const sent = api('POST', '/items/mark-read', { ids });
  const answered = sent.catch(() => {});
  ids.forEach((id) => sentReads.set(id, answered));
  answered.then(() => ids.forEach((id) => sentReads.get(id) === answered && sentReads.delete(id)));
  try {
    await sent;
    if (batch.some((entry) => entry.item.cluster)) app.reloadCounts();
  } catch (e) {
    for (const { item, list } of batch) {
      if (item.is_read) list.showRead(item, false);
    }
    showError(e, t('item.not_marked_read', { count: batch.length }));
  }
}

/** Queues `item`, shown read in `list`, to be marked read with the next batch. */
export function queueRead(list, item) {
  pendingReads.set(item.id, { item, list });
  if (pendingReads.size >= READ_BATCH_MAX) flushPendingReads();
  else if (!pendingReadsTimer) pendingReadsTimer = setTimeout(flushPendingReads, READ_BATCH_DELAY_MS);
}

/**
 * Drops the queued "read" mark of an item: an explicit choice replaces it. Returns the answer
 * of a batch already sent with it, which the choice must wait for: the server could otherwise
 * take the two in the other order and keep the item read.
 */
export function forgetQueuedRead(id) {
  pendingReads.delete(id);
  return sentReads.get(id);
}

window.addEventListener('pagehide', () => {
  if (pendingReads.size === 0) return;
  const ids = [...pendingReads.keys()];
  pendingReads.clear();
  // keepalive lets the request finish after the page is gone.
  fetch('/api/v1/items/mark-read', {
    method: 'POST',
    credentials: 'same-origin',
    keepalive: true,
    headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
    body: JSON.stringify({ ids }),
  }).catch(() => {});
});
