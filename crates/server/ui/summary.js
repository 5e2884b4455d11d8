// Summaries (F42) in the reader: an opened item's generated summary above its content, and
// "Summarize", which asks the server for one. The server answers at once (the built-in
// summarizer, or a summary made before) or 202 while a remote model works; then the item is
// read again every few seconds until its summary is there.

import { api } from './api.js';
import { h } from './dom.js';

const POLL_MS = 2000;
const POLL_TRIES = 30;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** The summary block of an opened item, or null while it has none. Plain text, never HTML. */
export function summaryBlock(item) {
  const summary = item.generated_summary;
  if (!summary) return null;
  return h('section', { class: 'item-summary', 'aria-label': 'Summary' },
    h('h3', null, 'Summary'),
    h('p', null, summary.text));
}

/**
 * Asks for `item`'s summary and keeps it on the item; answers true once it is there, false
 * when it is still queued after a minute of polling. Errors (no text, a refused request) throw.
 */
export async function requestSummary(item) {
  const answer = await api('POST', '/items/' + item.id + '/summarize');
  if (answer && answer.generated_summary) {
    item.generated_summary = answer.generated_summary;
    return true;
  }
  for (let i = 0; i < POLL_TRIES; i++) {
    await sleep(POLL_MS);
    const detail = await api('GET', '/items/' + item.id);
    const summary = (detail.item || detail).generated_summary;
    if (summary) {
      item.generated_summary = summary;
      return true;
    }
  }
  return false;
}
