// An opened item's media (F51): a player for each podcast or video enclosure, with its type,
// size and a download link, and for YouTube videos the thumbnail with a play link and a
// click-to-load player from the privacy-enhanced host. Nothing is fetched before a click:
// players use preload="none" and the embed's frame is made only when asked for.

import { h, icon } from './dom.js';
import { formatNumber, t } from './i18n.js';

/** The host of the click-to-load embeds; the CSP's frame-src allows it and nothing else. */
const EMBED_ORIGIN = 'https://www.youtube-nocookie.com';

/** A byte count for people: 48.2 MB. */
export function formatSize(bytes) {
  if (!(bytes > 0)) return null;
  const units = ['bytes', 'KB', 'MB', 'GB', 'TB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  const digits = unit === 0 || value >= 100 ? 0 : 1;
  const number = formatNumber(value, { minimumFractionDigits: digits, maximumFractionDigits: digits });
  return unit === 0 ? t('media.bytes', { count: value, size: number }) : number + ' ' + units[unit];
}

/** The video id of a YouTube watch, short, embed or youtu.be address; null otherwise. */
export function youtubeId(address) {
  let url;
  try {
    url = new URL(address);
  } catch (e) {
    return null;
  }
  const host = url.hostname.replace(/^(www|m)\./, '');
  let id = null;
  if (host === 'youtu.be') id = url.pathname.slice(1);
  else if (host === 'youtube.com' || host === 'youtube-nocookie.com') {
    if (url.pathname === '/watch') id = url.searchParams.get('v');
    else {
      const m = url.pathname.match(/^\/(?:shorts|embed|live|v)\/([^/?#]+)/);
      id = m && m[1];
    }
  }
  return id && /^[\w-]{11}$/.test(id) ? id : null;
}

/** Whether an enclosure plays as audio or video, by its type or else its file name. */
function kindOf(enclosure) {
  const type = (enclosure.mime_type || '').toLowerCase();
  if (type.startsWith('audio/')) return 'audio';
  if (type.startsWith('video/')) return 'video';
  if (type.startsWith('image/')) return 'image';
  if (type) return 'file';
  const path = enclosure.url.split(/[?#]/)[0].toLowerCase();
  if (/\.(mp3|m4a|aac|ogg|oga|opus|wav|flac)$/.test(path)) return 'audio';
  if (/\.(mp4|m4v|webm|ogv|mov)$/.test(path)) return 'video';
  if (/\.(jpe?g|png|gif|webp|avif)$/.test(path)) return 'image';
  return 'file';
}

function fileName(address) {
  try {
    const name = decodeURIComponent(new URL(address).pathname.split('/').pop() || '');
    return name || t('media.the_file');
  } catch (e) {
    return t('media.the_file');
  }
}

/** One enclosure: a player for audio and video, and its facts with a download link. */
function enclosureFigure(enclosure, kind) {
  const facts = [enclosure.mime_type || (kind === 'audio' ? t('media.audio') : kind === 'video' ? t('media.video') : t('media.file')), formatSize(enclosure.length)]
    .filter(Boolean).join(' · ');
  const player = kind === 'audio'
    ? h('audio', { controls: true, preload: 'none', src: enclosure.url })
    : kind === 'video'
      ? h('video', { controls: true, preload: 'none', playsinline: true, src: enclosure.url })
      : null;
  return h('figure', { class: 'enclosure enclosure-' + kind },
    player,
    h('figcaption', null,
      h('span', { class: 'enclosure-facts' }, facts),
      ' ',
      h('a', { class: 'enclosure-download', href: enclosure.url, download: '', target: '_blank', rel: 'noopener noreferrer' },
        icon('download'), t('media.download', { file: fileName(enclosure.url) }))));
}

/** A YouTube video: its thumbnail linking to the video, and a button that loads the player. */
function videoFigure(id, link, thumbnail, showImages) {
  const watch = link || 'https://www.youtube.com/watch?v=' + id;
  const figure = h('figure', { class: 'video-thumb' });
  const play = h('button', { type: 'button', class: 'button', 'data-role': 'embed' }, icon('play'), t('media.play_here'));
  play.addEventListener('click', () => {
    const frame = h('iframe', {
      class: 'video-frame',
      src: EMBED_ORIGIN + '/embed/' + id + '?autoplay=1',
      title: t('media.player'),
      allow: 'autoplay; encrypted-media; picture-in-picture; fullscreen',
      allowfullscreen: true,
      // The embed host refuses to play without knowing the embedding site.
      referrerpolicy: 'strict-origin-when-cross-origin',
    });
    figure.replaceChildren(frame);
  });
  figure.append(
    h('a', { class: 'video-link', href: watch, target: '_blank', rel: 'noopener noreferrer', 'aria-label': t('media.play_youtube') },
      showImages ? h('img', { src: thumbnail || 'https://i.ytimg.com/vi/' + id + '/hqdefault.jpg', alt: '', loading: 'lazy' }) : null,
      h('span', { class: 'play-badge', 'aria-hidden': 'true' }, icon('play'))),
    h('figcaption', null,
      h('a', { href: watch, target: '_blank', rel: 'noopener noreferrer' }, t('media.watch_youtube')), ' ', play));
  return figure;
}

/**
 * The media block of an opened item, or null when it has none. `html` is the item's content,
 * so that an image or player it already shows is not shown twice.
 */
export function mediaBlock(item, enclosures, html, showImages) {
  const figures = [];
  const list = (enclosures || []).filter((e) => e && e.url);
  const image = list.find((e) => kindOf(e) === 'image');
  const video = youtubeId(item.url || '') || list.map((e) => youtubeId(e.url)).find(Boolean) || null;
  if (video) figures.push(videoFigure(video, item.url, item.thumbnail_url || (image && image.url), showImages));
  else if (image && showImages && !(html || '').includes('<img')) {
    figures.push(h('figure', { class: 'enclosure enclosure-image' }, h('img', { src: image.url, alt: '', loading: 'lazy' })));
  }
  for (const enclosure of list) {
    if (youtubeId(enclosure.url)) continue;
    const kind = kindOf(enclosure);
    if (kind === 'image' || (html && html.includes(enclosure.url))) continue;
    figures.push(enclosureFigure(enclosure, kind));
  }
  return figures.length ? h('div', { class: 'item-media' }, figures) : null;
}
