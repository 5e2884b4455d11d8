// Read, starred and bookmarked (ItemList's methods, installed by item-list.js): every change
// shows at once and is undone with a message if the server refuses it; "Mark all read" marks
// what the view lists, asks first above a few items, and offers an Undo.

import { app } from './state.js';
import { api } from './api.js';
import { toMillis } from './dom.js';
import { confirmDialog, showError, toast } from './dialogs.js';
import { flushPendingReads, forgetQueuedRead } from './reads.js';
import { t } from './i18n.js';

/** "Mark all read" asks first above this many items. */
const MARK_ALL_CONFIRM_ABOVE = 20;
/** How long the Undo of "Mark all read" is offered. */
const UNDO_MS = 10000;
/** The most ids one mark-read takes (the API's limit). */
const MARK_IDS_MAX = 1000;

/** Shows a row as read or unread: its style and the words a screen reader says. */
function showRowRead(li, value) {
  li.classList.toggle('is-read', value);
  const state = li.querySelector('.state-text');
  if (state) state.textContent = t(value ? 'item.state_read' : 'item.state_unread');
}

/** The methods of ItemList that change the state of items. */
export const itemState = {
  /** Shows an item as read or unread, with the unread counts, without asking the server. */
  showRead(item, value) {
    if (item.is_read === value) return;
    item.is_read = value;
    const li = this.liOf(item.id);
    if (li) {
      showRowRead(li, value);
      const button = li.querySelector('[data-action="read"]');
      if (button) button.textContent = value ? t('item.mark_unread') : t('item.mark_read');
    }
    app.adjustUnread(item.feed_id, value ? -1 : 1);
    // Its copies listed from other feeds too, as the server marks them (issue 35).
    if (app.prefs.duplicates_read !== 'copy') item.cluster?.also_in.forEach((c) => this.byId.has(c.item_id) && this.showRead(this.byId.get(c.item_id), value));
  },

  /** Sets the read state at once, then tells the server; undone with a message if refused. */
  async setRead(item, isRead) {
    if (item.is_read === isRead) return;
    // An explicit choice replaces a queued "read" mark, and goes after one already sent.
    const sent = forgetQueuedRead(item.id);
    this.showRead(item, isRead);
    try {
      await sent;
      await api('PUT', '/items/' + item.id + '/state', { is_read: isRead });
      if (item.cluster) app.reloadCounts();
    } catch (e) {
      this.showRead(item, !isRead);
      showError(e, isRead ? t('item.not_marked_read', { count: 1 }) : t('item.not_marked_unread'));
    }
  },

  toggleRead(id) {
    const item = this.byId.get(id);
    if (item) this.setRead(item, !item.is_read);
  },

  async toggleStar(id) {
    const item = this.byId.get(id);
    if (!item) return;
    const apply = (value) => {
      item.is_starred = value;
      const li = this.liOf(id);
      if (li) {
        li.classList.toggle('is-starred', value);
        li.querySelector('[data-action="star"]').setAttribute('aria-pressed', value ? 'true' : 'false');
      }
      app.adjustStarred(value ? 1 : -1);
    };
    const value = !item.is_starred;
    apply(value);
    try {
      await api('PUT', '/items/' + id + '/state', { is_starred: value });
    } catch (e) {
      apply(!value);
      showError(e, value ? t('item.not_starred') : t('item.not_unstarred'));
    }
  },

  async bookmark(id) {
    try {
      await api('POST', '/bookmarks', { item_id: id });
      toast({ title: t('item.bookmarked'), message: t('item.bookmarked_message'), link: { href: '/bookmarks', text: t('item.open_bookmarks') } });
    } catch (e) {
      showError(e, t('item.bookmark_failed'));
    }
  },

  /** How many unread items "Mark all read" would mark here, as far as the UI knows. */
  unreadInView() {
    if (this.route.filter === 'starred') {
      // Only starred items are listed; when more pages follow, the starred count bounds them.
      const listed = this.items.filter((item) => !item.is_read).length;
      return this.hasMore ? Math.max(listed, app.starredCount || 0) : listed;
    }
    if (this.route.feedId) {
      const sub = this.subscription();
      return sub ? sub.unread_count || 0 : 0;
    }
    if (this.route.groupId) return app.sidebar ? app.sidebar.groupUnread(this.route.groupId) : 0;
    if (this.route.tag || this.route.hot) return this.items.filter((item) => !item.is_read).length;
    return app.sidebar ? app.sidebar.totalUnread() : 0;
  },

  /**
   * Marks what this view lists read — a feed, a group, everything, or in Starred only the
   * starred items — with the API's before-time rule: only items published before the list
   * was loaded (or the newest loaded one), so items that arrived since stay unread. Above
   * MARK_ALL_CONFIRM_ABOVE items it asks first; an Undo restores exactly the state before.
   */
  async markAllRead() {
    const count = this.unreadInView();
    if (count > MARK_ALL_CONFIRM_ABOVE
      && !(await confirmDialog(t('mark_all.confirm_title', { count }), t('mark_all.confirm_message', { list: this.title() }), t('list.mark_all_read'), false))) return;
    const newest = this.items.reduce((max, item) => Math.max(max, toMillis(item.published_at)), 0);
    const before = new Date(Math.max(this.loadedAt, newest + 1000)).toISOString().replace(/\.\d{3}Z$/, 'Z');
    const changed = this.items.filter((item) => !item.is_read && toMillis(item.published_at) < Date.parse(before));
    let body;
    if (this.route.tag || this.route.hot) {
      // No scope covers a tag or the hot list: its page marks the items it lists, by id.
      body = { ids: changed.map((item) => item.id).slice(0, MARK_IDS_MAX) };
    } else {
      body = { before };
      if (this.route.feedId) body.feed_id = this.route.feedId;
      else if (this.route.groupId) body.group_id = this.route.groupId;
      else if (this.route.filter !== 'starred') body.all = true;
      if (this.route.filter === 'starred') body.starred = true;
    }
    const show = (value) => {
      for (const item of changed) {
        item.is_read = value;
        const li = this.liOf(item.id);
        if (li) showRowRead(li, value);
      }
    };
    show(true);
    let result;
    try {
      await flushPendingReads();
      result = await api('POST', '/items/mark-read', body);
    } catch (e) {
      show(false);
      showError(e, t('mark_all.failed'));
      app.reloadCounts();
      return;
    }
    app.reloadCounts();
    const marked = result ? result.marked : changed.length;
    toast({
      key: 'marked-read',
      title: t('mark_all.done_title'),
      message: t('mark_all.done', { list: this.title(), count: marked }),
      duration: UNDO_MS,
      button: result && result.undo ? { text: t('common.undo'), onclick: () => this.undoMarkAll(result.undo, show) } : null,
    });
  },

  /** Restores the state before a "Mark all read". */
  async undoMarkAll(undo, show) {
    try {
      await api('POST', '/items/mark-read/undo', undo);
      if (!this.destroyed) show(false);
      toast({ key: 'marked-read', title: t('mark_all.undone_title'), message: t('mark_all.undone') });
    } catch (e) {
      showError(e, t('mark_all.undo_failed'));
    }
    app.reloadCounts();
  },
};
