// "Summarize" in the reader (F42), loaded when first asked: it asks the server for an item's
// summary. The server answers at once (the built-in summarizer, or a summary made before) or
// 202 while a remote model works; then the item is read again every few seconds until its
// summary is there. The opened item shows it above its content (item-open.js).

import { api } from './api.js';

const POLL_MS = 2000;
const POLL_TRIES = 30;

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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
