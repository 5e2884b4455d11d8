// What the left pane says when a paused, failing or stopped feed's icon is clicked, and its
// "Resume all" of stopped feeds: loaded when first used (sidebar.js), so that the first
// screen carries neither this code nor its words (src/ui.rs budgets).

import { app } from './state.js';
import { api } from './api.js';
import { showError, toast } from './dialogs.js';
import { t } from './i18n.js';

/** Explains the state of `sub`, a paused, failing or stopped subscription, in a toast. */
export function explainStatus(sub) {
  const link = { href: '/feeds/' + sub.feed_id + '/settings', text: t('page.feed_settings') };
  if (sub.suspended) {
    toast({ title: t('feedstatus.paused_title', { feed: sub.title }), message: t('feedstatus.paused_message'), link });
    return;
  }
  const stopped = sub.status === 'stopped';
  toast({
    title: t('feedstatus.title', { feed: sub.title, state: t(stopped ? 'feedstatus.stopped' : 'feedstatus.backoff') }),
    message: sub.last_error || sub.status_reason || t('feedstatus.last_fetch_failed'),
    action: stopped ? t('feedstatus.stopped_action') : t('feedstatus.backoff_action'),
    kind: 'error',
    link,
  });
}

/** Puts every stopped feed of the user back on schedule (they are fetched at the next tick). */
export async function resumeAllStopped(button) {
  button.disabled = true;
  try {
    const result = await api('POST', '/subscriptions/resume-stopped');
    toast({ title: t('feedstatus.resumed_count', { count: result.resumed }), message: t('feedstatus.resumed_message') });
    await app.reloadFeeds();
  } catch (e) {
    button.disabled = false;
    showError(e, t('feedstatus.resume_failed'));
  }
}
