// A thread read as a conversation, and a mail's HTML in a sandboxed frame.
//
// The frame is an `<iframe sandbox srcdoc>` with no allow-scripts and no
// allow-same-origin: nothing in it runs, and it cannot reach this page or
// its storage. Its own Content-Security-Policy (a meta tag, first in the
// document) allows no script, no fetch, no form and no remote image until the
// person asks for images. Before that, the HTML is parsed inert (DOMParser
// runs nothing and loads nothing) and cleaned: scripts, refreshes, forms,
// embedded frames and event handlers removed, links opened with
// rel="noopener noreferrer". Either layer alone stops what the other misses.

import * as api from './api.js';
import { h, busy, when, download } from './ui.js';

const REMOVE = 'script, noscript, meta, base, link, form, iframe, frame, frameset, object, embed, applet, input, button, select, textarea, template, svg script';
const URL_ATTRS = ['href', 'src', 'action', 'formaction', 'background', 'poster', 'xlink:href', 'srcset'];
const RESOURCE_ATTRS = ['src', 'srcset', 'background', 'poster', 'xlink:href'];

function remote(value) {
  return /^\s*(https?:)?\/\//i.test(value);
}

// Where a resource may come from: a URL naming its host (http(s) or
// //host), the mail's own image (cid:, a data: image). Anything else
// (src="x") resolves against this page in a srcdoc frame and would ask the
// app's own origin.
function fetchable(value) {
  return /^\s*((https?:)?\/\/|cid:|data:image\/)/i.test(value);
}

function fetchableSet(value) {
  return value.split(',').every((each) => !each.trim() || fetchable(each.trim()));
}

// Event-handler attributes taken out of the markup before it is parsed:
// Chromium checks each against this page's script-src as the parser sets it,
// even in a DOMParser document that never runs it, and logs a CSP error.
// Tags are read as the HTML tokenizer reads them (a name ends at a space,
// "/", ">" or "="; a value is quoted or runs to a space or ">"); comments are
// passed over. Whatever this misses, clean() still removes.
const OPEN = /<!--[\s\S]*?(?:-->|$)|<[a-zA-Z][^\t\n\f\r />]*/g;
const ATTRIBUTE = /[\t\n\f\r /]*([^\t\n\f\r />][^\t\n\f\r />=]*)(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"[^"]*"|'[^']*'|[^\t\n\f\r >]*))?/y;

export function withoutHandlers(html) {
  let out = '';
  let from = 0;
  OPEN.lastIndex = 0;
  for (let tag; (tag = OPEN.exec(html)); ) {
    if (tag[0].startsWith('<!--')) continue;
    out += html.slice(from, OPEN.lastIndex);
    ATTRIBUTE.lastIndex = OPEN.lastIndex;
    for (let a; (a = ATTRIBUTE.exec(html)); ) {
      if (!/^on/i.test(a[1])) out += a[0];
      OPEN.lastIndex = ATTRIBUTE.lastIndex;
    }
    from = OPEN.lastIndex;
  }
  return out + html.slice(from);
}

// The cleaned HTML and whether it held remote images. `inline` maps a
// Content-ID (lower case) to its image as a data: URL: `cid:` links show it.
export function clean(html, showImages, inline = new Map()) {
  const doc = new DOMParser().parseFromString(withoutHandlers(html), 'text/html');
  let blocked = 0;
  doc.querySelectorAll(REMOVE).forEach((el) => el.remove());
  for (const el of doc.querySelectorAll('*')) {
    for (const attr of [...el.attributes]) {
      const name = attr.name.toLowerCase();
      if (name.startsWith('on')) el.removeAttribute(attr.name);
      else if (URL_ATTRS.includes(name) && /^\s*(javascript|vbscript|data:text\/html)/i.test(attr.value)) el.removeAttribute(attr.name);
    }
    if (el.tagName === 'IMG' && /^\s*cid:/i.test(el.getAttribute('src') || '')) {
      const id = el.getAttribute('src').trim().slice(4);
      let key = id;
      try {
        key = decodeURIComponent(id);
      } catch {
        // not %-encoded: as written
      }
      const image = inline.get(key.toLowerCase());
      if (image) el.setAttribute('src', image);
      else el.removeAttribute('src');
    }
    // A resource from anywhere but the web or the mail itself, never.
    for (const name of RESOURCE_ATTRS) {
      const value = el.getAttribute(name);
      if (value !== null && !(name === 'srcset' ? fetchableSet(value) : fetchable(value))) el.removeAttribute(name);
    }
    if (!['A', 'AREA'].includes(el.tagName) && el.hasAttribute('href') && !fetchable(el.getAttribute('href'))) el.removeAttribute('href');
    if ((el.tagName === 'IMG' || el.tagName === 'SOURCE') && !showImages) {
      for (const name of ['src', 'srcset']) {
        if (el.hasAttribute(name) && remote(el.getAttribute(name))) {
          el.removeAttribute(name);
          blocked++;
        }
      }
    }
    if (el.tagName === 'A') {
      el.setAttribute('target', '_blank');
      el.setAttribute('rel', 'noopener noreferrer');
    }
  }
  // Remote resources named in styles (backgrounds, fonts, imports): none
  // until asked, and then only images from the web; an import (a style
  // sheet the frame's policy refuses anyway) never.
  const styled = /url\s*\(|@import/i;
  for (const el of doc.querySelectorAll('style, [style]')) {
    const text = el.tagName === 'STYLE' ? el.textContent : el.getAttribute('style');
    if (!styled.test(text)) continue;
    const cut = text.replace(/@import[^;]*;?/gi, '').replace(/url\s*\(\s*(["']?)([^)]*?)\1\s*\)/gi, (url, quote, target) => (showImages && fetchable(target) && !/^\s*cid:/i.test(target) ? url : 'none'));
    if (cut === text) continue;
    if (el.tagName === 'STYLE') el.textContent = cut;
    else el.setAttribute('style', cut);
    if (!showImages) blocked++;
  }
  return { html: doc.body ? doc.body.innerHTML : '', blocked, head: [...doc.head.querySelectorAll('style')].map((s) => s.outerHTML).join('') };
}

// The srcdoc of a mail's frame: its own policy first, then the mail.
export function frameDocument(html, showImages) {
  const images = showImages ? 'data: cid: https: http:' : 'data: cid:';
  const policy = `default-src 'none'; style-src 'unsafe-inline'; img-src ${images}; font-src data:; form-action 'none'; base-uri 'none'`;
  return `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="Content-Security-Policy" content="${policy}"><meta name="referrer" content="no-referrer"></head><body>${html}</body></html>`;
}

export function mailFrame(html, inline) {
  const frame = h('iframe', { class: 'mail-html', sandbox: 'allow-popups allow-popups-to-escape-sandbox', referrerpolicy: 'no-referrer', title: 'Message (HTML)' });
  const notice = h('p', { class: 'images-note' });
  const render = (showImages) => {
    const cleaned = clean(html, showImages, inline);
    frame.srcdoc = frameDocument(cleaned.head + cleaned.html, showImages);
    notice.replaceChildren();
    if (cleaned.blocked && !showImages) {
      const show = h('button', { type: 'button', class: 'quiet', text: 'Show images' });
      show.addEventListener('click', () => render(true));
      notice.append('Remote images are hidden so the sender cannot see that you opened this. ', show);
    }
  };
  render(false);
  return h('div', { class: 'mail-body' }, notice, frame);
}

// The images an HTML mail shows inline (its `cid:` links), as data: URLs by
// Content-ID: fetched with the credential, so the frame (which has none and
// loads nothing remote) can show them.
async function inlineImages(m) {
  const html = (m.html || '').toLowerCase();
  const found = new Map();
  for (const a of m.attachments || []) {
    const id = (a.contentId || '').toLowerCase();
    if (!id || !/^image\//.test(a.contentType || '') || !html.includes(`cid:${id}`)) continue;
    const file = await api.blob('/inbox/attachment', { id: m.id, index: a.index, box: m.box === 'outbound' ? 'outbound' : undefined, disposition: 'inline' });
    found.set(id, await new Promise((resolve, reject) => {
      const reader = new FileReader();
      reader.onload = () => resolve(String(reader.result));
      reader.onerror = () => reject(new Error(`${a.filename} could not be read.`));
      reader.readAsDataURL(new Blob([file], { type: a.contentType.split(';')[0] }));
    }));
  }
  return found;
}

function attachmentList(message, inline = new Map()) {
  // An image the HTML shows in place is not listed again as a file.
  const files = (message.attachments || []).filter((a) => !inline.has((a.contentId || '').toLowerCase()));
  if (!files.length) return null;
  const box = message.box === 'outbound' ? 'outbound' : undefined;
  const preview = h('div', { class: 'preview' });
  const items = files.map((a) => {
    const get = h('button', { type: 'button', class: 'quiet', text: `Download ${a.filename}` });
    get.addEventListener('click', () =>
      busy(get, async () => download(await api.blob('/inbox/attachment', { id: message.id, index: a.index, box }), a.filename)),
    );
    const kind = a.contentType || '';
    const viewable = kind.startsWith('image/') || kind.startsWith('text/') || kind === 'application/pdf';
    const show = viewable ? h('button', { type: 'button', class: 'quiet', text: `Preview` }) : null;
    if (show) {
      show.addEventListener('click', () =>
        busy(show, async () => {
          const file = await api.blob('/inbox/attachment', { id: message.id, index: a.index, box, disposition: 'inline' });
          preview.replaceChildren(previewOf(file, kind, a.filename));
        }),
      );
    }
    return h('li', {}, h('span', { class: 'file', text: `${a.filename} (${Math.ceil(a.size / 1024)} KB)` }), get, show);
  });
  return h('div', { class: 'attachments' }, h('h4', { text: 'Attachments' }), h('ul', {}, items), preview);
}

function previewOf(file, kind, name) {
  if (kind.startsWith('text/')) {
    const pre = h('pre', { class: 'text-preview' });
    file.text().then((t) => (pre.textContent = t));
    return pre;
  }
  if (kind.startsWith('image/')) return h('img', { src: URL.createObjectURL(file), alt: name, class: 'image-preview' });
  // A PDF: Chromium's viewer refuses to run in a sandboxed frame (a grey
  // box), so the frame is not sandboxed; its bytes are typed as a PDF here,
  // whatever the server said, so the viewer (never the HTML parser) reads them.
  const pdf = URL.createObjectURL(new Blob([file], { type: 'application/pdf' }));
  return h('div', { class: 'pdf' },
    h('iframe', { src: pdf, title: name, class: 'pdf-preview' }),
    h('p', { class: 'hint' }, h('a', { href: pdf, target: '_blank', rel: 'noopener', text: `Open ${name} in a new tab` })));
}

// A sent message's delivery, overall and to each recipient, as the API has it.
function deliveryOf(m) {
  if (!m.delivery) return null;
  const each = (m.delivery.recipients || []).map((r) => `${r.address}: ${r.status}`).join(', ');
  return h('p', { class: 'delivery', 'data-delivery': m.delivery.status, text: `Delivery: ${m.delivery.status}${each ? ` (${each})` : ''}` });
}

const QUARANTINE = {
  spam: 'it was judged or reported to be spam',
  spoofed: 'it fails its sender domain\'s DMARC policy',
  blocked_sender: 'its sender is on your receive block list',
  sender_not_allowed: 'its sender is not on your receive allow list',
};

// Whether a received message is what it claims to be, from the verdicts the
// service recorded when it arrived: a sentence first, the checks under it.
function trustOf(m) {
  const a = m.authentication;
  if (m.box === 'outbound' || !a) return null;
  const dmarc = a.dmarc || {};
  const domain = dmarc.domain || (m.from || '').split('@').pop();
  let kind = 'unverified';
  let sentence = dmarc.policy
    ? `The sender could not be verified: ${domain}'s DMARC check gave ${dmarc.result}.`
    : `The sender could not be verified: ${domain} publishes no DMARC policy and nothing else proves it.`;
  if (a.spoofed) {
    kind = 'spoofed';
    sentence = `Not from ${domain}: this message fails ${domain}'s DMARC policy (${dmarc.policy}). Do not trust its links or requests.`;
  } else if (a.summary === 'pass') {
    kind = 'verified';
    sentence = `Verified: sent by ${domain}${dmarc.byArc ? ` (forwarded; vouched for by ${dmarc.byArc})` : ''}.`;
  } else if (a.summary === 'fail') {
    kind = 'failed';
    sentence = `Failed its checks: this message may not come from ${domain}.`;
  }
  const checks = [];
  if (a.spf) checks.push(`SPF ${a.spf.result}${a.spf.domain ? ` for ${a.spf.domain}` : ''}${a.spf.clientIp ? ` from ${a.spf.clientIp}` : ''}`);
  for (const d of a.dkim || []) checks.push(`DKIM ${d.result} (${d.domain}, selector ${d.selector})`);
  if (!(a.dkim || []).length) checks.push('DKIM: no signature');
  if (a.dmarc) checks.push(`DMARC ${dmarc.result} for ${dmarc.domain}${dmarc.policy ? `, policy ${dmarc.policy}` : ''}`);
  if (a.arc) checks.push(`ARC ${a.arc.result}${a.arc.sealer ? ` (sealed by ${a.arc.sealer})` : ''}`);
  const note = h('div', { class: `trust ${kind}`, 'data-trust': kind, role: 'note' }, h('p', { text: sentence }));
  if (a.authors && a.authors.length > 1) {
    note.append(h('p', { class: 'authors', text: `It names ${a.authors.length} senders, each judged: ${a.authors.join(', ')}.` }));
  }
  if (m.quarantine) {
    note.append(h('p', { class: 'quarantined', text: `Kept out of your inbox since ${when(m.quarantine.at)}: ${QUARANTINE[m.quarantine.reason] || m.quarantine.reason}.` }));
  }
  if (a.spf || a.dmarc || (a.dkim || []).length) {
    note.append(h('details', {}, h('summary', { text: 'The checks' }), h('ul', {}, checks.map((c) => h('li', { text: c })))));
  }
  return note;
}

// "Pal Smith <pal@partner.example>", or the address alone, by the names
// the message carries.
function person(m, address) {
  const name = address === m.from ? m.fromName : (m.names || {})[address];
  return name ? `${name} <${address}>` : address;
}

// Whether answering `m` to all reaches more than one person beside the
// mailbox it is in.
function othersOf(m) {
  const mine = (m.mailbox || '').toLowerCase();
  const first = m.box === 'outbound' ? m.to || [] : m.replyTo && m.replyTo.length ? m.replyTo : [m.from];
  return new Set([...first, ...(m.to || []), ...(m.cc || [])].map((a) => (a || '').toLowerCase()).filter((a) => a && a !== mine)).size;
}

// Reply, Reply all and Forward under one message: `answer(m, mode)`.
function answerButtons(m, answer) {
  const button = (text, mode, label) => {
    const b = h('button', { type: 'button', class: 'quiet', text, 'data-answer': mode, 'aria-label': label });
    b.addEventListener('click', () => answer(m, mode));
    return b;
  };
  const who = m.fromName || m.from;
  return h('div', { class: 'message-actions', role: 'group', 'aria-label': `Answer the message from ${who}` },
    button('Reply', 'reply', `Reply to this message from ${who}`),
    othersOf(m) > 1 ? button('Reply all', 'reply-all', `Reply all to this message from ${who}`) : null,
    button('Forward', 'forward', `Forward this message from ${who}`));
}

// "Report spam" under a received message: `report(m)`.
function reportButton(m, report) {
  if (!report || m.box === 'outbound' || m.quarantine) return null;
  const b = h('button', { type: 'button', class: 'quiet', text: 'Report spam', 'data-action': 'spam', 'aria-label': `Report spam: this message from ${m.fromName || m.from}` });
  b.addEventListener('click', () => busy(b, () => report(m)));
  return b;
}

async function messageView(summary, answer, report) {
  const read = await api.get('/inbox', { id: summary.id });
  const m = read.message;
  const inline = m.html ? await inlineImages(m) : new Map();
  const body = m.html ? mailFrame(m.html, inline) : h('pre', { class: 'mail-text', text: m.text || '' });
  const list = (label, addresses) => (addresses && addresses.length ? h('p', { class: label.toLowerCase(), text: `${label}: ${addresses.map((a) => person(m, a)).join(', ')}` }) : null);
  return h(
    'article',
    { class: `message ${m.box === 'outbound' ? 'outbound' : 'inbound'}`, 'data-message': m.id, 'data-subject': m.subject || '', 'data-kept': m.quarantine ? m.quarantine.reason : undefined },
    h('header', {}, h('strong', { class: 'from', text: person(m, m.from) }), h('span', { class: 'date', text: when(m.date || m.ingestedAt) })),
    h('p', { class: 'to', text: `To: ${(m.to || []).map((a) => person(m, a)).join(', ')}` }),
    list('Cc', m.cc),
    list('Bcc', m.bcc),
    trustOf(m),
    deliveryOf(m),
    body,
    attachmentList(m, inline),
    answer ? answerButtons(m, answer) : null,
    reportButton(m, report),
  );
}

// One message on its own: mail kept out of the inbox has no thread. Spam
// offers "Not spam", which moves it back into the inbox (POST /inbox).
export async function singleMessageView(id, { onBack }) {
  const back = h('button', { type: 'button', class: 'quiet', text: '← Back' });
  back.addEventListener('click', onBack);
  const article = await messageView({ id });
  const subject = article.dataset.subject;
  const toolbar = h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Message actions' }, back);
  if (article.dataset.kept === 'spam') {
    const ham = h('button', { type: 'button', class: 'quiet', text: 'Not spam', 'data-action': 'not-spam' });
    ham.addEventListener('click', () => busy(ham, async () => {
      await api.post('/inbox', { id, spam: false });
      await onBack();
    }));
    toolbar.append(ham);
  }
  return h('div', { class: 'thread single' }, toolbar, h('h2', { class: 'subject', tabindex: '-1', text: subject || 'Message' }), article);
}

// "Delete forever" on a thread in the trash: asked once more on the page
// (POST /inbox/delete cannot be undone), then gone.
function deleteForever(threadId, after) {
  const ask = h('button', { type: 'button', class: 'danger', text: 'Delete forever', 'data-action': 'delete' });
  ask.addEventListener('click', () => {
    const sure = h('button', { type: 'button', class: 'danger', text: 'Delete for good' });
    const keep = h('button', { type: 'button', class: 'quiet', text: 'Keep it' });
    const confirm = h('div', { class: 'confirm', role: 'group', 'aria-label': 'Delete forever?' },
      h('p', { text: 'Delete this conversation for good? It cannot be undone.' }), sure, keep);
    keep.addEventListener('click', () => {
      confirm.remove();
      ask.focus();
    });
    sure.addEventListener('click', () => busy(sure, async () => {
      await api.post('/inbox/delete', { thread: threadId });
      await after();
    }));
    ask.closest('.toolbar').after(confirm);
    keep.focus();
  });
  return ask;
}

// The folder moves a thread offers where it is: from the inbox, Archive and
// Trash; from the archive, back to the inbox; from the trash, back to the
// inbox or (with the manage permission) deleted for good.
function folderActions(t, act, onBack, mayDelete) {
  if (t.folder === 'trash') return [act('Move to inbox', { folder: 'inbox' }, onBack, 'inbox'), mayDelete ? deleteForever(t.threadId, onBack) : null];
  if (t.folder === 'archive') return [act('Move to inbox', { folder: 'inbox' }, onBack, 'inbox'), act('Trash', { folder: 'trash' }, onBack, 'trash')];
  return [act('Archive', { folder: 'archive' }, onBack, 'archive'), act('Trash', { folder: 'trash' }, onBack, 'trash')];
}

// The thread page: its messages oldest first, the folder and read actions,
// and a reply written below the messages. `own`: the account's addresses.
export async function threadView(threadId, { onBack, onReply, own = [], mayDelete = true }) {
  const res = await api.get('/inbox', { thread: threadId });
  const t = res.thread;
  const view = h('div', { class: 'thread', 'data-thread': t.threadId });
  const act = (label, body, after, action) => {
    const b = h('button', { type: 'button', class: 'quiet', text: label, 'data-action': action });
    b.addEventListener('click', () => busy(b, async () => {
      await api.post('/inbox', { thread: t.threadId, ...body });
      await after();
    }));
    return b;
  };
  const back = h('button', { type: 'button', class: 'quiet', text: '← Back', 'aria-keyshortcuts': 'Escape' });
  back.addEventListener('click', onBack);
  const last = res.messages[res.messages.length - 1];
  const answer = (label, mode, cls) => {
    const b = h('button', { type: 'button', class: cls || 'quiet', text: label, 'data-action': mode });
    b.addEventListener('click', () => onReply(t, last, mode));
    return b;
  };
  // Reply to all: when the last message reached more than one other person.
  const others = othersOf(last);
  view.append(
    h('div', { class: 'toolbar', role: 'toolbar', 'aria-label': 'Thread actions' },
      back,
      answer('Reply', 'reply', 'primary'),
      others > 1 ? answer('Reply all', 'reply-all') : null,
      answer('Forward', 'forward'),
      act('Mark unread', { unread: true }, onBack, 'unread'),
      folderActions(t, act, onBack, mayDelete),
    ),
    h('h2', { class: 'subject', tabindex: '-1', text: t.subject || '(no subject)' }),
  );
  // Each message answers for itself too (the toolbar's answer the last).
  // Spam is reported one message at a time (it leaves its thread).
  const report = async (m) => {
    await api.post('/inbox', { id: m.id, spam: true });
    await onBack();
  };
  for (const m of res.messages) view.append(await messageView(m, (read, mode) => onReply(t, read, mode), report));
  view.append(h('div', { class: 'reply-slot' }));
  return view;
}
