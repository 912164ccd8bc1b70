// The feed on screen: sections and items as DOM elements, placed at the frames the server
// computed for the page's width (each section's `layout`: its height, one frame per item, the
// frames of its header and footer, and for the carousel a horizontal scroll), changed step by
// step by a sequential delta (see feed-client.js) and animated once per delta: inserted items
// fade in, removed ones fade out, every item (and header or footer) that ends up somewhere else
// slides there from where it was (FLIP: First, Last, Invert, Play), updated ones change in
// place with a short flash.
//
// Frames belong to positions, not items, so the steps of a delta only add, remove and reorder
// elements; when the delta is done (end), every section takes its final layout and each element
// moves to the frame of the position it now holds.
//
// Every live element carries data-section-id / data-item-id (headers and footers:
// data-supplementary="header"/"footer" and data-view-id inside their section's element);
// elements on their way out are moved to an overlay without those attributes, so the DOM always
// says exactly what the feed is.

const DURATION = 320;
const SUPPLEMENTARY = ['header', 'footer'];

function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A hue from a number, so placeholders look different from each other but stay the same. */
function hue(seed) {
  let x = (Number(seed) * 2654435761) >>> 0;
  x ^= x >>> 15;
  return x % 360;
}

function compact(count) {
  if (count >= 1e6) return `${(count / 1e6).toFixed(count >= 1e7 ? 0 : 1)}M`;
  if (count >= 1e3) return `${(count / 1e3).toFixed(count >= 1e4 ? 0 : 1)}k`;
  return String(count);
}

function initials(name) {
  return name.split(/\s+/).filter(Boolean).slice(0, 2).map((part) => [...part][0]).join('').toUpperCase();
}

function avatar(user, size) {
  const node = element('span', 'avatar', initials(user.display_name));
  node.style.width = node.style.height = `${size}px`;
  node.style.background = `hsl(${hue(user.id)} 55% 45%)`;
  node.setAttribute('aria-hidden', 'true');
  return node;
}

function duration(seconds) {
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, '0')}`;
}

/** Puts `node` at `frame` (points, relative to its section's top-left corner). */
function place(node, frame) {
  node.style.left = `${frame.x}px`;
  node.style.top = `${frame.y}px`;
  node.style.width = `${frame.width}px`;
  node.style.height = `${frame.height}px`;
}

/** The element of one item, by its kind; its section's layout places it (see layOut). */
export function renderItem(item) {
  const node = element('article', `item kind-${item.kind}`);
  node.dataset.itemId = item.id;
  // The size alone serves a section without a layout (a feed asked without width: items flow).
  if (item.size) {
    node.style.width = `${item.size.width}px`;
    node.style.height = `${item.size.height}px`;
  }
  const data = item.data;
  switch (item.kind) {
    case 'video': {
      const { video, author } = data;
      const thumbnail = element('div', 'thumbnail');
      const h = hue(video.id);
      thumbnail.style.background = `linear-gradient(160deg, hsl(${h} 70% 62%), hsl(${(h + 50) % 360} 60% 32%))`;
      thumbnail.append(element('span', 'duration', duration(video.duration_seconds)));
      thumbnail.append(element('span', 'title', video.title));
      thumbnail.append(element('span', 'likes', `♥ ${compact(video.like_count)}`));
      const bar = element('div', 'author-bar');
      if (author) {
        bar.append(avatar(author, 24), element('span', 'name', author.display_name));
      } else {
        bar.append(element('span', 'name muted', 'unknown author'));
      }
      node.append(thumbnail, bar);
      break;
    }
    case 'ad': {
      const image = element('div', 'ad-image');
      const h = hue(data.id * 7 + 3);
      image.style.background = `repeating-linear-gradient(45deg, hsl(${h} 45% 88%) 0 14px, hsl(${h} 45% 80%) 14px 28px)`;
      image.append(element('span', 'advertiser', data.advertiser));
      const bar = element('div', 'ad-bar');
      bar.append(element('span', 'sponsored', 'Sponsored'), element('span', 'ad-title', data.title));
      node.append(image, bar);
      break;
    }
    case 'user': {
      node.append(avatar(data.user, 56), element('span', 'name', data.user.display_name), element('span', 'handle', `@${data.user.handle}`));
      const mutual = data.mutual_followees;
      node.append(element('span', 'reason', mutual > 0 ? `followed by ${mutual} you follow` : `${compact(data.follower_count)} followers`));
      node.append(element('span', 'follow', 'Follow'));
      break;
    }
    case 'header': {
      node.append(element('h2', 'feed-title', data.title));
      const who = element('span', 'viewer');
      who.append(avatar(data.viewer, 28), element('span', 'name', `${data.viewer.display_name} · @${data.viewer.handle}`));
      node.append(who);
      break;
    }
    case 'empty':
      node.append(element('strong', 'empty-title', data.title), element('p', 'empty-message', data.message));
      break;
    default:
      node.append(element('span', 'unknown', `${item.kind} ${item.id}`));
  }
  return node;
}

/** The element of a section's header or footer (`slot`), by the view's kind. */
export function renderSupplementary(view, slot) {
  const node = element('div', `supplementary ${slot} kind-${view.kind}`);
  node.dataset.supplementary = slot;
  node.dataset.viewId = view.id;
  const data = view.data;
  switch (view.kind) {
    case 'section_title':
      node.append(element('h3', 'section-title', data.title));
      break;
    case 'see_all':
      node.append(element('span', 'see-all', `${data.title ?? 'See all'} (${data.count})`));
      break;
    case 'sponsored':
      node.append(element('span', 'sponsored-by', `${data.label ?? 'Sponsored'} · ${data.advertiser}`));
      break;
    default:
      node.append(element('span', 'unknown', `${view.kind} ${view.id}`));
  }
  return node;
}

/** The section element's header or footer element, or null. */
function supplementaryOf(sectionNode, slot) {
  return sectionNode.querySelector(`:scope > [data-supplementary="${slot}"]`);
}

/**
 * The element of one section: its header, a scroller holding the items, and its footer, laid
 * out from the section's layout.
 */
export function renderSection(section) {
  // section-KIND, not kind-KIND: a section and its items may share a kind name (ad, header, empty).
  const node = element('section', `section section-${section.kind}`);
  node.dataset.sectionId = section.id;
  // The scroller is the band between header and footer; only the carousel's scrolls.
  const scroller = element('div', 'scroller');
  const items = element('div', 'items');
  for (const item of section.items) items.append(renderItem(item));
  scroller.append(items);
  node.append(scroller);
  for (const slot of SUPPLEMENTARY) if (section[slot]) node.append(renderSupplementary(section[slot], slot));
  layOut(node, section);
  return node;
}

/**
 * Places a section element's parts at the frames of `section.layout`: the section's height,
 * each item at the frame of its position, the header and footer at theirs; a horizontally
 * scrolling layout makes the band between header and footer a scroller `content_width` wide.
 * Without a layout (no width asked) the items flow in rows at their sizes.
 */
function layOut(node, section) {
  const layout = section.layout;
  const scroller = node.querySelector(':scope > .scroller');
  const items = scroller.querySelector(':scope > .items');
  node.classList.toggle('flow', !layout);
  if (!layout) {
    node.style.height = '';
    return;
  }
  node.style.height = `${layout.height}px`;
  const top = layout.header ? layout.header.y + layout.header.height : 0;
  const bottom = layout.footer ? layout.footer.y : layout.height;
  scroller.style.top = `${top}px`;
  scroller.style.height = `${Math.max(0, bottom - top)}px`;
  const horizontal = layout.scroll === 'horizontal';
  scroller.classList.toggle('horizontal', horizontal);
  items.style.width = horizontal ? `${layout.content_width}px` : '';
  // Frames are relative to the section; the items sit in the band, so shift them up by its top.
  [...items.children].forEach((child, index) => {
    const frame = layout.frames[index];
    if (frame) place(child, { ...frame, y: frame.y - top });
  });
  for (const slot of SUPPLEMENTARY) {
    const view = supplementaryOf(node, slot);
    if (view && layout[slot]) place(view, layout[slot]);
  }
}

/** The elements FLIP follows under `root` (itself included), each with the key it is known by. */
function flipEntries(root) {
  const nodes = [root, ...root.querySelectorAll('[data-item-id], [data-supplementary]')]
    .filter((node) => node.matches('[data-item-id], [data-supplementary]'));
  return nodes.map((node) => [flipKey(node), node]);
}

/**
 * Items are known by id (item ids are unique in a feed, and an item may be rendered anew by a
 * change); a header or footer by its section's id and its slot (every ad slot's footer has the
 * same view id). A detached header or footer has no key: callers take keys before removing.
 */
function flipKey(node) {
  if (node.dataset.itemId !== undefined) return `item ${node.dataset.itemId}`;
  const section = node.closest('[data-section-id]');
  return section ? `${node.dataset.supplementary} of ${section.dataset.sectionId}` : null;
}

/**
 * A feed view for FeedClient: `reset(document)` draws a whole feed; between `begin()` and
 * `end(document)` it takes the sequential steps of one delta, then lays out the result and
 * animates the difference.
 */
export class FeedView {
  constructor(root, { animate = true } = {}) {
    this.root = root;
    this.animate = animate;
    root.classList.add('feed');
    this.list = element('div', 'sections');
    this.ghosts = element('div', 'ghosts');
    root.replaceChildren(this.list, this.ghosts);
    this.before = null;
    this.departed = [];
    this.flashed = new Set();
  }

  get sectionNodes() {
    return [...this.list.children];
  }

  sectionNode(sectionIndex) {
    const section = this.list.children[sectionIndex];
    if (!section) throw new Error(`no section at ${sectionIndex}`);
    return section;
  }

  itemsOf(sectionIndex) {
    return this.sectionNode(sectionIndex).querySelector(':scope > .scroller > .items');
  }

  reset(document) {
    this.ghosts.replaceChildren();
    this.list.replaceChildren(...document.sections.map(renderSection));
    this.markPrefetch(document);
  }

  /**
   * Marks the section the page's prefetch hint names (data-prefetch): the one whose appearance
   * would fetch the next page. This page shows one page and does not fetch more.
   */
  markPrefetch(document) {
    const hinted = document.prefetch?.section ?? null;
    for (const node of this.sectionNodes) node.toggleAttribute('data-prefetch', node.dataset.sectionId === hinted);
  }

  /** Where each item, header and footer is now: the F of FLIP. */
  begin() {
    this.before = new Map();
    this.departed = [];
    this.flashed = new Set();
    for (const [key, node] of flipEntries(this.list)) {
      if (key !== null && !this.before.has(key)) this.before.set(key, node.getBoundingClientRect());
    }
  }

  /** Takes `nodes` out of the feed, remembering what FLIP knew them by (for their ghosts). */
  depart(nodes) {
    for (const node of nodes) {
      this.departed.push(...flipEntries(node));
      node.remove();
    }
  }

  removed(section, index, count) {
    if (section === null) {
      this.depart(this.sectionNodes.slice(index, index + count));
    } else {
      this.depart([...this.itemsOf(section).children].slice(index, index + count));
    }
  }

  inserted(section, index, values) {
    const parent = section === null ? this.list : this.itemsOf(section);
    const anchor = parent.children[index] ?? null;
    for (const value of values) parent.insertBefore(section === null ? renderSection(value) : renderItem(value), anchor);
  }

  moved(section, from, to) {
    const parent = section === null ? this.list : this.itemsOf(section);
    const node = parent.children[from];
    node.remove();
    parent.insertBefore(node, parent.children[to] ?? null);
  }

  changed(section, index, values) {
    const parent = section === null ? this.list : this.itemsOf(section);
    values.forEach((value, offset) => {
      const old = parent.children[index + offset];
      const node = section === null ? renderSection(value) : renderItem(value);
      parent.replaceChild(node, old);
      if (section !== null) this.flashed.add(node);
      else node.querySelectorAll('[data-item-id], [data-supplementary]').forEach((item) => this.flashed.add(item));
    });
  }

  /** A header or footer (`slot`) of the section at `section` is now `view` (null: it has none). */
  supplementary(section, slot, view) {
    const node = this.sectionNode(section);
    const old = supplementaryOf(node, slot);
    if (view === null) {
      if (old) this.depart([old]);
      return;
    }
    const fresh = renderSupplementary(view, slot);
    if (old) {
      node.replaceChild(fresh, old);
      this.flashed.add(fresh);
    } else {
      node.append(fresh);
    }
  }

  /**
   * Lays every section out as `document` says (null after a delta that did not apply: the
   * client draws the feed again), then the L, I and P of FLIP, fading out what left and in
   * what arrived.
   */
  end(document = null) {
    if (document) {
      this.sectionNodes.forEach((node, index) => {
        if (document.sections[index]) layOut(node, document.sections[index]);
      });
      this.markPrefetch(document);
    }
    const before = this.before ?? new Map();
    this.before = null;
    const rootBox = this.root.getBoundingClientRect();
    const entries = flipEntries(this.list);
    const live = new Set(entries.map(([key]) => key));
    const leaving = [];
    for (const [key, gone] of this.departed) {
      const box = before.get(key);
      if (key === null || live.has(key) || !box) continue;
      // A copy without ids, where it was, fading out over the feed.
      const ghost = gone.cloneNode(true);
      for (const node of [ghost, ...ghost.querySelectorAll('*')]) {
        for (const name of ['data-item-id', 'data-section-id', 'data-supplementary', 'data-view-id']) node.removeAttribute(name);
      }
      ghost.classList.add('ghost');
      ghost.style.left = `${box.left - rootBox.left}px`;
      ghost.style.top = `${box.top - rootBox.top}px`;
      ghost.style.width = `${box.width}px`;
      ghost.style.height = `${box.height}px`;
      leaving.push(ghost);
    }
    this.departed = [];
    if (!this.animate) {
      this.flashed = new Set();
      return;
    }
    this.ghosts.append(...leaving);
    for (const ghost of leaving) {
      ghost.animate([{ opacity: 1, transform: 'scale(1)' }, { opacity: 0, transform: 'scale(0.85)' }], { duration: DURATION, easing: 'ease-in' })
        .finished.then(() => ghost.remove(), () => ghost.remove());
    }
    const seen = new Set();
    for (const [key, node] of entries) {
      const first = seen.has(key) ? undefined : before.get(key);
      seen.add(key);
      if (!first) {
        node.animate([{ opacity: 0, transform: 'scale(0.9)' }, { opacity: 1, transform: 'scale(1)' }], { duration: DURATION, easing: 'ease-out' });
        continue;
      }
      const last = node.getBoundingClientRect();
      const dx = first.left - last.left;
      const dy = first.top - last.top;
      if (Math.abs(dx) > 0.5 || Math.abs(dy) > 0.5) {
        node.animate([{ transform: `translate(${dx}px, ${dy}px)` }, { transform: 'none' }], { duration: DURATION, easing: 'cubic-bezier(.2,.7,.2,1)' });
      }
      if (this.flashed.has(node)) {
        node.animate([{ filter: 'brightness(1.35)', boxShadow: '0 0 0 3px #f5b301' }, { filter: 'none', boxShadow: '0 0 0 0 transparent' }], { duration: DURATION * 2 });
      }
    }
    this.flashed = new Set();
  }

  /** What the DOM shows: `[{id, header, footer, items: [id…]}…]` (see structureOf in feed-client.js). */
  structure() {
    return this.sectionNodes.map((section) => ({
      id: section.dataset.sectionId,
      header: supplementaryOf(section, 'header')?.dataset.viewId ?? null,
      footer: supplementaryOf(section, 'footer')?.dataset.viewId ?? null,
      items: [...section.querySelector(':scope > .scroller > .items').children].map((node) => node.dataset.itemId),
    }));
  }
}
