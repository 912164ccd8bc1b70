// The feed on screen: sections and items as DOM elements, laid out with the sizes the server
// computed for the page's width, changed step by step by a sequential delta (see
// feed-client.js) and animated once per delta: inserted items fade in, removed ones fade out,
// every item that ends up somewhere else slides there from where it was (FLIP: First, Last,
// Invert, Play), updated ones change in place with a short flash.
//
// Every live element carries data-section-id / data-item-id; elements on their way out are
// moved to an overlay without those attributes, so the DOM always says exactly what the feed is.

const INSET = 12;
const DURATION = 320;

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

/** The element of one item, by its kind; sizes come from the item (server layout). */
export function renderItem(item) {
  const node = element('article', `item kind-${item.kind}`);
  node.dataset.itemId = item.id;
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

/** The element of one section and its items. */
export function renderSection(section) {
  const node = element('section', `section kind-${section.kind}`);
  node.dataset.sectionId = section.id;
  const items = element('div', 'items');
  items.style.paddingLeft = items.style.paddingRight = `${INSET}px`;
  for (const item of section.items) items.append(renderItem(item));
  node.append(items);
  return node;
}

/**
 * A feed view for FeedClient: `reset(document)` draws a whole feed; between `begin()` and
 * `end()` it takes the sequential steps of one delta, then animates the difference.
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

  itemsOf(sectionIndex) {
    const section = this.list.children[sectionIndex];
    if (!section) throw new Error(`no section at ${sectionIndex}`);
    return section.querySelector(':scope > .items');
  }

  reset(document) {
    this.ghosts.replaceChildren();
    this.list.replaceChildren(...document.sections.map(renderSection));
  }

  /** Where each item is now, by id: the F of FLIP. */
  begin() {
    this.before = new Map();
    this.departed = [];
    this.flashed = new Set();
    for (const node of this.list.querySelectorAll('[data-item-id]')) {
      if (!this.before.has(node.dataset.itemId)) this.before.set(node.dataset.itemId, node.getBoundingClientRect());
    }
  }

  depart(nodes) {
    for (const node of nodes) {
      node.remove();
      this.departed.push(node);
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
      else node.querySelectorAll('[data-item-id]').forEach((item) => this.flashed.add(item));
    });
  }

  /** The L, I and P of FLIP, fading out what left and in what arrived. */
  end() {
    const before = this.before ?? new Map();
    this.before = null;
    const rootBox = this.root.getBoundingClientRect();
    const live = new Set();
    for (const node of this.list.querySelectorAll('[data-item-id]')) live.add(node.dataset.itemId);
    const leaving = [];
    for (const gone of this.departed) {
      const items = gone.matches('[data-item-id]') ? [gone] : [...gone.querySelectorAll('[data-item-id]')];
      for (const item of items) {
        const box = before.get(item.dataset.itemId);
        if (live.has(item.dataset.itemId) || !box) continue;
        // A copy without ids, where the item was, fading out over the feed.
        const ghost = item.cloneNode(true);
        ghost.removeAttribute('data-item-id');
        ghost.querySelectorAll('[data-item-id]').forEach((node) => node.removeAttribute('data-item-id'));
        ghost.classList.add('ghost');
        ghost.style.left = `${box.left - rootBox.left}px`;
        ghost.style.top = `${box.top - rootBox.top}px`;
        ghost.style.width = `${box.width}px`;
        ghost.style.height = `${box.height}px`;
        leaving.push(ghost);
      }
    }
    this.departed = [];
    if (!this.animate) return;
    this.ghosts.append(...leaving);
    for (const ghost of leaving) {
      ghost.animate([{ opacity: 1, transform: 'scale(1)' }, { opacity: 0, transform: 'scale(0.85)' }], { duration: DURATION, easing: 'ease-in' })
        .finished.then(() => ghost.remove(), () => ghost.remove());
    }
    const seen = new Set();
    for (const node of this.list.querySelectorAll('[data-item-id]')) {
      const id = node.dataset.itemId;
      const first = seen.has(id) ? undefined : before.get(id);
      seen.add(id);
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

  /** What the DOM shows: `[{id, items: [id…]}…]`. */
  structure() {
    return this.sectionNodes.map((section) => ({
      id: section.dataset.sectionId,
      items: [...section.querySelector(':scope > .items').children].map((node) => node.dataset.itemId),
    }));
  }
}
