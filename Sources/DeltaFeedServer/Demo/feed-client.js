// deltafeed web client: keeps one viewer's feed document current from deltas.
//
// An ES module with no dependencies and no build step. It fetches
// GET /v1/users/{viewer}/feed once, then follows the feed in one of two modes.
//
// Polling (the default of FeedClient, and the fallback): every `interval` ms it asks
// GET …/feed/delta?since=SNAPSHOT in two forms:
//   - the sequential form is applied step by step to the list a view shows (each step is handed
//     to the view as it is applied, as Android's ListUpdateCallback receives it);
//   - the JSON Patch form (RFC 6902) is applied to the client's own copy of the feed document.
// After every delta the two results must agree (same sections, items, versions and data, and
// the view's own account of what it shows); when they do not, or the server answers 410 for a
// snapshot it no longer holds, the client fetches the feed again and says why.
//
// Live (`live: true` where the browser has EventSource): one Server-Sent Events stream,
// GET …/feed/live?since=SNAPSHOT&format=sequential, pushes each change as it happens. A `delta`
// event carries exactly what GET …/feed/delta?since=PREVIOUS&format=sequential would answer and
// is applied to the document and the view in the same way; since a stream carries one form,
// the cross-check against JSON Patch is replaced by checking that every item, header and footer
// the delta brought or changed hashes to its version, that every layout has a frame for each of
// them, that the event's id is the delta's snapshot, and that the view shows the result. A `reset` event replaces the document. When the stream breaks (a
// server shutting down, a lost connection) the browser reconnects by itself and sends the last
// event's id, so nothing is missed; when it fails several times in a row (a 503, a proxy that
// does not pass the stream) the client polls instead, and tries the stream again later.
//
// The rules mirror the reference Swift client (DeltaFeedClient): every position is checked at
// the moment its step runs, counts must match the values carried, and a delta must start from
// the snapshot held. An item whose fields changed may come as a patch (its new version and the
// changed fields): the patched item must hash to that version (itemVersion), which proves the
// patch met the item the server patched. Anything else is a DeltaApplyError naming the step.
//
// A section may have a header and a footer (supplementary views, shaped like items and hashed
// like them) and, when the feed was asked with `width`, a `layout`: the frames the server
// computed for its items and views. A page may carry a `prefetch` hint (the section whose
// appearance should fetch the next page). Deltas keep all of these current, so after every
// delta the document equals what a fresh GET …/feed with the same parameters answers.

/** A delta that does not apply to the document held; `operation` names the failing step. */
export class DeltaApplyError extends Error {
  constructor(message, operation = null) {
    super(operation === null ? message : `${operation}: ${message}`);
    this.name = 'DeltaApplyError';
    this.operation = operation;
  }
}

/** An answer the server should not have given (a status or body the API does not describe). */
export class FeedHTTPError extends Error {
  constructor(status, message) {
    super(message);
    this.name = 'FeedHTTPError';
    this.status = status;
  }
}

// MARK: - JSON values

/** Deep equality of JSON values (object members in any order). */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    if (a.length !== b.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false;
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  for (const key of keys) {
    if (!Object.prototype.hasOwnProperty.call(b, key) || !jsonEqual(a[key], b[key])) return false;
  }
  return true;
}

const clone = (value) => (value === undefined ? undefined : JSON.parse(JSON.stringify(value)));

// MARK: - Item versions

/** `value` as canonical JSON: members sorted by name, no spaces (the server's item data bytes). */
export function canonicalJSON(value) {
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    return `{${Object.keys(value).sort().map((key) => `${JSON.stringify(key)}:${canonicalJSON(value[key])}`).join(',')}}`;
  }
  return JSON.stringify(value);
}

const FNV_OFFSET = 0xcbf29ce484222325n;
const FNV_PRIME = 0x100000001b3n;
const UINT64 = 0xffffffffffffffffn;

/**
 * The version an item's kind and data hash to: 64-bit FNV-1a over the kind's UTF-8, a 0xFF
 * byte and the data's canonical JSON, as 16 hex digits (the server's StableHasher).
 */
export function itemVersion(item) {
  const encoder = new TextEncoder();
  let hash = FNV_OFFSET;
  const mix = (byte) => { hash = ((hash ^ BigInt(byte)) * FNV_PRIME) & UINT64; };
  for (const byte of encoder.encode(item.kind)) mix(byte);
  mix(0xff);
  for (const byte of encoder.encode(canonicalJSON(item.data))) mix(byte);
  return hash.toString(16).padStart(16, '0');
}

// A header or footer view is hashed exactly like an item (kind, 0xFF, canonical data), so the
// same check proves a patched view too; `what` names it in the message.
function checkItemVersion(item, name, what = `item ${item.id}`) {
  const computed = itemVersion(item);
  if (computed !== item.version) {
    throw new DeltaApplyError(`${what} hashes to version ${computed} after its patch, the delta announces ${item.version}`, name);
  }
}

/**
 * The item at `path` (`[section, item]`) of `document`, the one a delta starts from: what an
 * insert's `{old_path}` value names.
 * @throws {DeltaApplyError} when the path names no item.
 */
function heldItem(document, path, name) {
  const [section, item] = Array.isArray(path) ? path : [];
  const held = document.sections[section]?.items?.[item];
  if (!Number.isInteger(section) || !Number.isInteger(item) || !held) {
    throw new DeltaApplyError(`old_path ${JSON.stringify(path)} names no item of the snapshot`, name);
  }
  return held;
}

/**
 * `item` with `change.patch` (an RFC 7396 merge patch of changed fields) merged into its data
 * and `change.version` as its version, checked against that version. Every patched member must
 * be a value the item has; a patch never holds null.
 */
function patchedItem(item, change, name, what = `item ${item.id}`) {
  const merge = (target, patch, path) => {
    if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) throw new DeltaApplyError(`patch ${path} must be an object`, name);
    for (const [key, value] of Object.entries(patch)) {
      if (!Object.prototype.hasOwnProperty.call(target, key)) throw new DeltaApplyError(`${what} has no field ${path}/${key}`, name);
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) merge(target[key], value, `${path}/${key}`);
      else if (value === null || Array.isArray(value) || (target[key] !== null && typeof target[key] === 'object')) {
        throw new DeltaApplyError(`patch ${path}/${key} does not replace a value with a value`, name);
      } else target[key] = value;
    }
  };
  const result = clone(item);
  merge(result.data, change.patch, '');
  result.version = change.version;
  checkItemVersion(result, name, what);
  return result;
}

// MARK: - JSON Patch (RFC 6902)

/** The unescaped tokens of a JSON Pointer (RFC 6901). */
function pointerTokens(pointer) {
  if (pointer === '') return [];
  if (typeof pointer !== 'string' || !pointer.startsWith('/')) {
    throw new Error(`pointer ${JSON.stringify(pointer)} must start with /`);
  }
  return pointer.slice(1).split('/').map((token) => {
    if (/~[^01]|~$/.test(token)) throw new Error(`pointer ${JSON.stringify(pointer)} has a ~ not followed by 0 or 1`);
    return token.replace(/~1/g, '/').replace(/~0/g, '~');
  });
}

/** An array index token: decimal without a leading zero, below `length` (or equal, or `-`, when `allowEnd`). */
function arrayIndex(token, length, allowEnd) {
  if (token === '-') {
    if (!allowEnd) throw new Error('"-" names no existing element');
    return length;
  }
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new Error(`"${token}" is not an array index`);
  const index = Number(token);
  if (!(index < length || (allowEnd && index === length))) {
    throw new Error(`index ${index} is out of range (${length} elements)`);
  }
  return index;
}

function containerAt(document, tokens) {
  let node = document;
  for (const token of tokens) {
    if (Array.isArray(node)) node = node[arrayIndex(token, node.length, false)];
    else if (node !== null && typeof node === 'object') {
      if (!Object.prototype.hasOwnProperty.call(node, token)) throw new Error(`no member "${token}"`);
      node = node[token];
    } else throw new Error(`cannot look up "${token}" in a ${node === null ? 'null' : typeof node}`);
  }
  return node;
}

function patchStep(document, operation) {
  const tokens = pointerTokens(operation.path);
  const parentOf = (path) => {
    if (path.length === 0) return [null, null];
    const parent = containerAt(document, path.slice(0, -1));
    if (parent === null || typeof parent !== 'object') throw new Error('the parent is not a container');
    return [parent, path[path.length - 1]];
  };
  const add = (path, value) => {
    const [parent, last] = parentOf(path);
    if (parent === null) return value;
    if (Array.isArray(parent)) parent.splice(arrayIndex(last, parent.length, true), 0, value);
    else parent[last] = value;
    return document;
  };
  const remove = (path) => {
    const [parent, last] = parentOf(path);
    if (parent === null) throw new Error('cannot remove the whole document');
    if (Array.isArray(parent)) return parent.splice(arrayIndex(last, parent.length, false), 1)[0];
    if (!Object.prototype.hasOwnProperty.call(parent, last)) throw new Error(`no member "${last}"`);
    const value = parent[last];
    delete parent[last];
    return value;
  };
  switch (operation.op) {
    case 'add':
      if (!('value' in operation)) throw new Error('add needs a value');
      return add(tokens, clone(operation.value));
    case 'remove':
      remove(tokens);
      return document;
    case 'replace': {
      if (!('value' in operation)) throw new Error('replace needs a value');
      const [parent, last] = parentOf(tokens);
      if (parent === null) return clone(operation.value);
      if (Array.isArray(parent)) parent[arrayIndex(last, parent.length, false)] = clone(operation.value);
      else if (!Object.prototype.hasOwnProperty.call(parent, last)) throw new Error(`no member "${last}"`);
      else parent[last] = clone(operation.value);
      return document;
    }
    case 'move': {
      if (typeof operation.from !== 'string') throw new Error('move needs from');
      const from = pointerTokens(operation.from);
      if (from.join('/') === tokens.join('/') && from.length === tokens.length) return document;
      if (tokens.length > from.length && from.every((token, i) => token === tokens[i])) {
        throw new Error(`cannot move ${operation.from} into its own child`);
      }
      return add(tokens, remove(from));
    }
    case 'copy':
      if (typeof operation.from !== 'string') throw new Error('copy needs from');
      return add(tokens, clone(containerAt(document, pointerTokens(operation.from))));
    case 'test':
      if (!jsonEqual(containerAt(document, tokens), operation.value)) throw new Error('test failed');
      return document;
    default:
      throw new Error(`unknown op ${JSON.stringify(operation.op)}`);
  }
}

/**
 * Applies RFC 6902 operations in order to a copy of `document` and returns it; `document`
 * itself is never changed, so a patch that fails half-way leaves nothing half-patched.
 * @throws {DeltaApplyError} naming the first operation that does not apply.
 */
export function applyJSONPatch(document, operations) {
  let result = clone(document);
  operations.forEach((operation, offset) => {
    try {
      result = patchStep(result, operation);
    } catch (error) {
      throw new DeltaApplyError(`${operation.op} ${operation.path}: ${error.message}`, `patch[${offset}]`);
    }
    // An item or a header/footer view patched field by field ends with its new version: it must hash to it.
    const version = /^\/sections\/(\d+)\/(?:items\/(\d+)|(header|footer))\/version$/.exec(operation.path);
    if (operation.op === 'replace' && version) {
      const section = result.sections[Number(version[1])];
      if (version[3]) checkItemVersion(section[version[3]], `patch[${offset}]`, `the ${version[3]} of section ${section.id}`);
      else checkItemVersion(section.items[Number(version[2])], `patch[${offset}]`);
    }
  });
  return result;
}

// MARK: - Sequential form

function checkCount(count, values, name) {
  if (!Number.isInteger(count) || count <= 0) throw new DeltaApplyError(`count ${count} must be positive`, name);
  if (values !== undefined && (!Array.isArray(values) || values.length !== count)) {
    throw new DeltaApplyError(`count ${count} but ${Array.isArray(values) ? values.length : 'no'} values`, name);
  }
}

function checkRange(index, lower, upper, what, name) {
  if (!Number.isInteger(index) || index < lower || index > upper) {
    throw new DeltaApplyError(`${what} ${index} is out of range (${upper < lower ? 'empty' : `${lower}…${upper}`})`, name);
  }
}

/**
 * Applies a sequential delta (`operations` in order, each position valid when it runs) to a
 * copy of `document` and returns it. `since` is the snapshot the delta was asked from (the
 * delta does not repeat it): it must be the document's. Each step is passed to `listener`
 * right after it is applied to the copy (ListUpdateCallback style): `removed(section, index, count)`,
 * `inserted(section, index, values)`, `moved(section, from, to)`, `changed(section, index,
 * values)`, where `section` is null for steps on the section list and otherwise the index of
 * the section at that moment. A change's value may be a patch (`{version, patch}`) of the item
 * it replaces. Steps on a section's `header` or `footer` (insert, remove, change; the view whole
 * or a patch) go to `supplementary(section, element, view)` if the listener has it, with the
 * view now shown or null when it was removed. Finally the header's `section_layouts` replace
 * those sections' layouts, `prefetch` (sent only when it changed; null: there is none now)
 * replaces the hint, and the versions `section_versions` names, the snapshot and the cursor
 * (`next_cursor`, sent only when it changed) are taken from it.
 * @throws {DeltaApplyError} for a delta from another snapshot, an unknown section, a position
 *   out of range at the moment of its step, a count that differs from the values carried, a
 *   header or footer inserted where one is or removed/changed where none is, or a layout whose
 *   frames do not match its section afterwards.
 */
export function applySequential(document, delta, since, listener = null) {
  if (since !== document.snapshot) {
    throw new DeltaApplyError(`the delta starts from ${since}, the document is ${document.snapshot}`);
  }
  const result = clone(document);
  delta.operations.forEach((step, offset) => {
    const name = `operations[${offset}]`;
    if (step.target === 'header' || step.target === 'footer') {
      applySupplementaryStep(result, step, name, listener);
      return;
    }
    let list;
    let section = null;
    if (step.target === 'sections') {
      list = result.sections;
    } else if (step.target === 'items') {
      section = step.section;
      checkRange(section, 0, result.sections.length - 1, 'section', name);
      list = result.sections[section].items;
    } else {
      throw new DeltaApplyError(`unknown target ${JSON.stringify(step.target)}`, name);
    }
    const values = step.target === 'sections' ? step.sections : step.items;
    switch (step.op) {
      case 'remove':
        checkCount(step.count, undefined, name);
        checkRange(step.index, 0, list.length - step.count, 'index', name);
        list.splice(step.index, step.count);
        listener?.removed(section, step.index, step.count);
        break;
      case 'insert':
        checkCount(step.count, values, name);
        if (values.some((value) => value && 'patch' in value)) throw new DeltaApplyError('an insert carries a patch', name);
        checkRange(step.index, 0, list.length, 'index', name);
        // An item given as `{old_path: [s, i]}` is the one the document the delta starts from
        // holds there (an item slid from one section into the next).
        list.splice(step.index, 0, ...values.map((value, at) => clone(
          section !== null && value && 'old_path' in value ? heldItem(document, value.old_path, `${name}.items[${at}]`) : value)));
        listener?.inserted(section, step.index, list.slice(step.index, step.index + step.count));
        break;
      case 'move': {
        checkRange(step.from, 0, list.length - 1, 'from', name);
        checkRange(step.to, 0, list.length - 1, 'to', name);
        const [element] = list.splice(step.from, 1);
        list.splice(step.to, 0, element);
        listener?.moved(section, step.from, step.to);
        break;
      }
      case 'change':
        checkCount(step.count, values, name);
        checkRange(step.index, 0, list.length - step.count, 'index', name);
        list.splice(step.index, step.count, ...values.map((value, at) => (
          section !== null && value && 'patch' in value ? patchedItem(list[step.index + at], value, name) : clone(value))));
        listener?.changed(section, step.index, list.slice(step.index, step.index + step.count));
        break;
      default:
        throw new DeltaApplyError(`unknown op ${JSON.stringify(step.op)}`, name);
    }
  });
  applyHeaderMembers(result, delta);
  checkLayouts(result);
  return result;
}

/**
 * One step on a section's header or footer (`step.target`), at the section's index now (the
 * new index: these steps come after every section and item step). A `change` may carry a
 * patch (`{version, patch}`), checked against the version like an item's.
 */
function applySupplementaryStep(result, step, name, listener) {
  const element = step.target;
  checkRange(step.section, 0, result.sections.length - 1, 'section', name);
  const section = result.sections[step.section];
  const present = Object.prototype.hasOwnProperty.call(section, element);
  const what = `the ${element} of section ${section.id}`;
  const checkView = (view) => {
    if (view === null || typeof view !== 'object' || Array.isArray(view)) throw new DeltaApplyError(`${step.op} of ${what} carries no view`, name);
  };
  switch (step.op) {
    case 'insert':
      if (present) throw new DeltaApplyError(`${what} exists already`, name);
      checkView(step.view);
      if ('patch' in step.view) throw new DeltaApplyError(`an insert of ${what} carries a patch`, name);
      section[element] = clone(step.view);
      break;
    case 'remove':
      if (!present) throw new DeltaApplyError(`${what} does not exist`, name);
      delete section[element];
      break;
    case 'change':
      if (!present) throw new DeltaApplyError(`${what} does not exist`, name);
      checkView(step.view);
      section[element] = 'patch' in step.view ? patchedItem(section[element], step.view, name, what) : clone(step.view);
      break;
    default:
      throw new DeltaApplyError(`unknown op ${JSON.stringify(step.op)}`, name);
  }
  listener?.supplementary?.(step.section, element, section[element] ?? null);
}

/** A `{"<index>": value}` member's keys as section indexes of `result`, checked. */
function sectionEntries(result, member, what) {
  return Object.entries(member ?? {}).map(([key, value]) => {
    const index = Number(key);
    if (!/^(0|[1-9][0-9]*)$/.test(key) || index >= result.sections.length) {
      throw new DeltaApplyError(`${what} names section ${key} of ${result.sections.length}`);
    }
    return [index, value];
  });
}

/**
 * What a batch or sequential delta's header sets after its steps: the layouts of sections kept
 * in place whose frames changed, the prefetch hint when it changed, section versions, the
 * snapshot and the cursor. (JSON Patch edits the same members with operations of its own.)
 */
function applyHeaderMembers(result, delta) {
  for (const [index, layout] of sectionEntries(result, delta.section_layouts, 'section_layouts')) {
    if (layout === null || typeof layout !== 'object' || Array.isArray(layout)) throw new DeltaApplyError(`section_layouts gives section ${index} no layout`);
    result.sections[index].layout = clone(layout);
  }
  // Present only when the hint changed: null means the page has none now (its member goes, as
  // a fresh page without a next cursor has no `prefetch` at all).
  if (Object.prototype.hasOwnProperty.call(delta, 'prefetch')) {
    if (delta.prefetch === null) delete result.prefetch;
    else result.prefetch = clone(delta.prefetch);
  }
  for (const [index, version] of sectionEntries(result, delta.section_versions, 'section_versions')) {
    result.sections[index].version = version;
  }
  result.snapshot = delta.snapshot;
  // Present only when the cursor changed (null: this is the last page now).
  if (Object.prototype.hasOwnProperty.call(delta, 'next_cursor')) result.next_cursor = delta.next_cursor;
}

/**
 * Every section with a layout has one frame per item and a header/footer frame exactly when it
 * has that view: a layout left stale by a delta (its section_layouts missed) fails here rather
 * than drawing items on top of each other.
 * @throws {DeltaApplyError} naming the first section that does not.
 */
export function checkLayouts(document) {
  for (const section of document.sections) {
    const layout = section.layout;
    if (layout === undefined) continue;
    if (layout === null || typeof layout !== 'object' || !Array.isArray(layout.frames)) throw new DeltaApplyError(`section ${section.id} has a layout without frames`);
    if (layout.frames.length !== section.items.length) {
      const count = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`;
      throw new DeltaApplyError(`section ${section.id} has ${count(section.items.length, 'item')} and ${count(layout.frames.length, 'frame')}`);
    }
    for (const element of ['header', 'footer']) {
      if ((section[element] !== undefined) !== (layout[element] !== undefined)) {
        throw new DeltaApplyError(`section ${section.id} ${section[element] === undefined ? 'has no' : 'has a'} ${element} but its layout ${layout[element] === undefined ? 'has no' : 'has a'} frame for one`);
      }
    }
  }
}

// MARK: - Agreement

/**
 * Where two JSON values first differ, as `path: a against b` (members in name order, values
 * shortened), or null when they are equal.
 */
function whereDiffer(a, b, path) {
  if (jsonEqual(a, b)) return null;
  const plain = (value) => value !== null && typeof value === 'object' && !Array.isArray(value);
  if (plain(a) && plain(b)) {
    for (const name of [...new Set([...Object.keys(a), ...Object.keys(b)])].sort()) {
      const found = whereDiffer(a[name], b[name], `${path}.${name}`);
      if (found !== null) return found;
    }
  }
  if (Array.isArray(a) && Array.isArray(b) && a.length === b.length) {
    for (let i = 0; i < a.length; i++) {
      const found = whereDiffer(a[i], b[i], `${path}[${i}]`);
      if (found !== null) return found;
    }
  }
  const show = (value) => (value === undefined ? 'nothing' : JSON.stringify(value).slice(0, 80));
  return `${path}: ${show(a)} against ${show(b)}`;
}

/**
 * Where two feed documents differ, as a sentence, or null when they are equal: section ids,
 * kinds and versions, then item ids, versions and data, then each section's header, footer,
 * layout and other members, then the page's own members (prefetch, snapshot, cursor…).
 */
export function documentDifference(a, b) {
  if (a.sections.length !== b.sections.length) return `${a.sections.length} sections against ${b.sections.length}`;
  for (let s = 0; s < a.sections.length; s++) {
    const [x, y] = [a.sections[s], b.sections[s]];
    if (x.id !== y.id || x.kind !== y.kind) return `section ${s} is ${x.id} (${x.kind}) against ${y.id} (${y.kind})`;
    if (x.version !== y.version) return `section ${x.id} has version ${x.version} against ${y.version}`;
    if (x.items.length !== y.items.length) return `section ${x.id} has ${x.items.length} items against ${y.items.length}`;
    for (let i = 0; i < x.items.length; i++) {
      if (x.items[i].id !== y.items[i].id) return `section ${x.id} item ${i} is ${x.items[i].id} against ${y.items[i].id}`;
      if (!jsonEqual(x.items[i], y.items[i])) return `item ${x.items[i].id} in ${x.id} differs`;
    }
    for (const member of ['header', 'footer', 'layout']) {
      const found = whereDiffer(x[member], y[member], `section ${x.id} ${member}`);
      if (found !== null) return found;
    }
    const found = whereDiffer(x, y, `section ${x.id}`);
    if (found !== null) return found;
  }
  const { sections: _a, ...pageA } = a;
  const { sections: _b, ...pageB } = b;
  return whereDiffer(pageA, pageB, 'the page');
}

/**
 * `[{id, header, footer, items: [id…]}…]`: the structure a view must show for `document`
 * (`header` and `footer` the ids of the section's views, null where it has none).
 */
export function structureOf(document) {
  return document.sections.map((section) => ({
    id: section.id, header: section.header?.id ?? null, footer: section.footer?.id ?? null, items: section.items.map((item) => item.id),
  }));
}

// MARK: - The client

const byteLength = (text) => new TextEncoder().encode(text).length;

/** EventSource.CLOSED: the browser gave up on the stream and will not reconnect by itself. */
const EVENT_SOURCE_CLOSED = 2;

/**
 * Checks that every item, header and footer of `after` that is new or has another version than
 * in `before` hashes to its version: what the JSON Patch cross-check proves when polling, for a
 * live delta.
 * @throws {DeltaApplyError} naming the first that does not.
 */
function checkChangedItems(before, after) {
  const held = new Map();
  const heldViews = new Map();  // the versions of headers and footers, hashed like items
  for (const section of before.sections) {
    for (const item of section.items) held.set(`${section.id}\n${item.id}`, item.version);
    for (const element of ['header', 'footer']) if (section[element]) heldViews.set(`${section.id}\n${element}`, section[element].version);
  }
  for (const section of after.sections) {
    for (const item of section.items) {
      if (held.get(`${section.id}\n${item.id}`) !== item.version) checkItemVersion(item, `section ${section.id}`);
    }
    for (const element of ['header', 'footer']) {
      const view = section[element];
      if (view && heldViews.get(`${section.id}\n${element}`) !== view.version) checkItemVersion(view, `section ${section.id}`, `the ${element} of section ${section.id}`);
    }
  }
}

/**
 * Keeps one viewer's feed current. `view` (optional) receives `reset(document)` for a whole
 * feed, then per delta `begin()`, each sequential step (see applySequential), and
 * `end(document)`; if it has `structure()`, what it returns (see structureOf: `[{id, header,
 * footer, items: [id…]}…]`) must match the document after every delta.
 *
 * The feed is asked for with `width` (points; items then carry sizes and sections layouts),
 * `limit`, `stackAds`, `kinds` (the item and header/footer kinds the view renders, e.g.
 * ['video', 'ad']; null: every kind, as the server defaults) and `viewport` (the height the
 * feed is seen through, which places the prefetch hint; null: the server's default), on the
 * feed, delta and live routes alike.
 *
 * `live: true` follows the feed over Server-Sent Events where `EventSource` exists, and polls
 * where it does not or when the stream keeps failing (`liveMaxErrors` failures in a row); after
 * falling back it tries the stream again after `liveRetryAfter` ms (doubling each time, at most
 * ten minutes; 0: never). `client.mode` says what it does: 'connecting', 'live', 'polling' or
 * 'stopped' (null before start()).
 *
 * Callbacks: `onFeed({document, bytes, reason, reset})` after every full document (reason null
 * for the first; `reset` true when a live `reset` event brought it), `onDelta({sequential,
 * patch, bytes, feedBytes, document, live})` after every delta applied (`patch` and
 * `bytes.jsonpatch` are null for a live delta, which comes in one form), `onError(error)` for
 * failures the client retries, `onMode({mode, reason})` when the mode changes.
 */
export class FeedClient {
  constructor({
    baseURL = '', viewer, width = null, limit = null, stackAds = false, kinds = null, viewport = null, interval = 1000,
    view = null, fetch = globalThis.fetch.bind(globalThis), onFeed = () => {}, onDelta = () => {}, onError = () => {},
    live = false, EventSource = globalThis.EventSource ?? null, liveMaxErrors = 3, liveRetryDelay = 1000,
    liveOpenTimeout = 10000, liveStable = 20000, liveRetryAfter = 60000, onMode = () => {},
  }) {
    if (!Number.isInteger(viewer) || viewer <= 0) throw new TypeError(`viewer must be a positive integer, not ${viewer}`);
    // The server answers an empty `kinds=` with 400: a view that renders nothing is a mistake here.
    if (kinds !== null && (!Array.isArray(kinds) || kinds.length === 0 || kinds.some((kind) => typeof kind !== 'string' || !/^[a-z0-9_]+$/i.test(kind)))) {
      throw new TypeError(`kinds must be null or a non-empty list of kind names, not ${JSON.stringify(kinds)}`);
    }
    Object.assign(this, { baseURL, viewer, width, limit, stackAds, kinds, viewport, interval, view, fetch, onFeed, onDelta, onError });
    Object.assign(this, { live, EventSource, liveMaxErrors, liveRetryDelay, liveOpenTimeout, liveStable, liveRetryAfter, onMode });
    this.document = null;
    this.stats = { deltas: 0, unchanged: 0, refetches: 0, retries: 0, events: 0, resets: 0, shutdowns: 0, liveErrors: 0, fallbacks: 0 };
    this.refetchReasons = [];
    this.timer = null;
    this.running = false;
    this.busy = null;
    this.mode = null;
    this.modeReason = null;
    this.polling = false;
    this.source = null;
    this.liveErrors = 0;
    this.liveOpenedAt = null;
    this.liveEnding = false;
    this.liveBackoff = liveRetryAfter;
    this.openTimer = null;
    this.liveTimer = null;
  }

  url(path, parameters = {}) {
    const query = new URLSearchParams();
    if (this.limit !== null) query.set('limit', String(this.limit));
    if (this.width !== null) query.set('width', String(this.width));
    if (this.viewport !== null) query.set('viewport', String(this.viewport));
    if (this.kinds !== null) query.set('kinds', this.kinds.join(','));
    if (this.stackAds) query.set('stack_ads', 'true');
    for (const [name, value] of Object.entries(parameters)) query.set(name, value);
    // Commas as the API writes them (kinds=video,ad): valid in a query either way, and readable in logs.
    return `${this.baseURL}/v1/users/${this.viewer}${path}?${String(query).replace(/%2C/g, ',')}`;
  }

  async request(url) {
    const response = await this.fetch(url, { headers: { Accept: 'application/json' }, cache: 'no-store' });
    const text = response.status === 304 ? '' : await response.text();
    if (response.status === 503) {
      const seconds = Number(response.headers.get('Retry-After')) || 1;
      throw Object.assign(new FeedHTTPError(503, `${url}: busy, retry after ${seconds}s`), { retryAfter: seconds });
    }
    return { status: response.status, text, json: text ? JSON.parse(text) : null };
  }

  /** Fetches the whole feed and shows it; `reason` says why when it is not the first fetch. */
  async fetchFeed(reason = null) {
    const answer = await this.request(this.url('/feed'));
    if (answer.status !== 200) throw new FeedHTTPError(answer.status, `GET feed answered ${answer.status}: ${answer.text}`);
    this.document = answer.json;
    if (reason !== null) {
      this.stats.refetches += 1;
      this.refetchReasons.push(reason);
    }
    this.view?.reset(clone(this.document));
    this.onFeed({ document: this.document, bytes: byteLength(answer.text), reason, reset: false });
    return this.document;
  }

  /**
   * Asks once for what changed and applies it. Resolves to 'unchanged', 'applied' or
   * 'refetched' (after a 410, or when the two forms disagreed).
   */
  async refresh() {
    if (this.document === null) {
      await this.fetchFeed();
      return 'refetched';
    }
    const since = this.document.snapshot;
    // Both forms from the same snapshot; a write landing between the two requests makes them
    // describe different new snapshots, so ask again (the server caches computed deltas).
    for (let attempt = 0; attempt < 4; attempt++) {
      const sequential = await this.request(this.url('/feed/delta', { since, format: 'sequential' }));
      if (sequential.status === 410) {
        await this.fetchFeed(`410 ${sequential.json?.error?.code ?? ''} for snapshot ${since}`.trim());
        return 'refetched';
      }
      if (sequential.status === 304) {
        this.stats.unchanged += 1;
        return 'unchanged';
      }
      if (sequential.status !== 200) throw new FeedHTTPError(sequential.status, `GET delta answered ${sequential.status}: ${sequential.text}`);
      const patch = await this.request(this.url('/feed/delta', { since, format: 'jsonpatch' }));
      if (patch.status === 410) {
        await this.fetchFeed(`410 ${patch.json?.error?.code ?? ''} for snapshot ${since}`.trim());
        return 'refetched';
      }
      if (patch.status === 200 && patch.json.snapshot === sequential.json.snapshot) {
        return this.apply(sequential, patch, since);
      }
      if (patch.status !== 200 && patch.status !== 304) throw new FeedHTTPError(patch.status, `GET delta answered ${patch.status}: ${patch.text}`);
      this.stats.retries += 1;
    }
    await this.fetchFeed('the sequential and JSON Patch deltas kept describing different snapshots');
    return 'refetched';
  }

  /** @throws {DeltaApplyError} when the view does not show the structure of `document`. */
  checkView(document) {
    if (!this.view?.structure) return;
    if (JSON.stringify(this.view.structure()) !== JSON.stringify(structureOf(document))) {
      throw new DeltaApplyError('the view does not show the patched document');
    }
  }

  async apply(sequential, patch, since) {
    const feedBefore = this.document;
    let shown;
    let patched;
    try {
      patched = applyJSONPatch(feedBefore, patch.json.patch);
      this.view?.begin();
      try {
        shown = applySequential(feedBefore, sequential.json, since, this.view);
      } finally {
        this.view?.end(shown ?? null);
      }
      const difference = documentDifference(shown, patched);
      if (difference !== null) throw new DeltaApplyError(`the sequential and JSON Patch results disagree: ${difference}`);
      this.checkView(patched);
    } catch (error) {
      if (!(error instanceof DeltaApplyError)) throw error;
      console.error(`deltafeed: delta ${feedBefore.snapshot} → ${patch.json.snapshot} did not apply: ${error.message}`);
      await this.fetchFeed(error.message);
      return 'refetched';
    }
    this.document = patched;
    this.stats.deltas += 1;
    this.onDelta({
      sequential: sequential.json, patch: patch.json, document: patched, live: false,
      bytes: { sequential: byteLength(sequential.text), jsonpatch: byteLength(patch.text) },
      feedBytes: byteLength(JSON.stringify(patched)),
    });
    return 'applied';
  }

  /**
   * Fetches the feed, then keeps it current until stop(): over the live stream when `live` is
   * set and the browser has EventSource, otherwise by polling every `interval` ms.
   */
  async start() {
    this.running = true;
    await this.fetchFeed();
    if (!this.running) return;
    if (!this.live) this.startPolling('live updates are off');
    else if (typeof this.EventSource !== 'function') this.startPolling('this browser has no EventSource');
    else this.openLive();
  }

  setMode(mode, reason = null) {
    if (this.mode === mode && this.modeReason === reason) return;
    this.mode = mode;
    this.modeReason = reason;
    this.onMode({ mode, reason });
  }

  // MARK: Polling

  startPolling(reason) {
    this.polling = true;
    this.setMode('polling', reason);
    this.schedule(this.interval);
  }

  schedule(delay) {
    if (!this.running || !this.polling) return;
    this.timer = setTimeout(async () => {
      let next = this.interval;
      try {
        this.busy = this.refresh();
        await this.busy;
      } catch (error) {
        next = error.retryAfter ? error.retryAfter * 1000 : Math.max(this.interval, 2000);
        this.onError(error);
      } finally {
        this.busy = null;
      }
      this.schedule(next);
    }, delay);
  }

  // MARK: Live

  /** Opens the stream from the snapshot held (closing any stream open before). */
  openLive() {
    this.closeLive();
    if (!this.running) return;
    const source = new this.EventSource(this.url('/feed/live', { since: this.document.snapshot, format: 'sequential' }));
    this.source = source;
    this.setMode('connecting', this.modeReason);
    this.armOpenTimer(source);
    source.addEventListener('open', () => {
      if (source !== this.source) return;
      clearTimeout(this.openTimer);
      this.liveOpenedAt = Date.now();
      this.setMode('live');
    });
    for (const kind of ['reset', 'delta', 'shutdown', 'gone']) {
      source.addEventListener(kind, (event) => this.liveEvent(source, kind, event));
    }
    source.addEventListener('error', () => this.liveError(source));
  }

  closeLive() {
    clearTimeout(this.openTimer);
    clearTimeout(this.liveTimer);
    this.source?.close();
    this.source = null;
    this.liveOpenedAt = null;
    this.liveEnding = false;
  }

  /** A stream that is not answered within liveOpenTimeout counts as a failure (a proxy holding it back). */
  armOpenTimer(source) {
    clearTimeout(this.openTimer);
    this.openTimer = setTimeout(() => {
      if (source === this.source && this.liveOpenedAt === null) this.liveFailed(`no answer within ${this.liveOpenTimeout} ms`, true);
    }, this.liveOpenTimeout);
  }

  liveEvent(source, kind, event) {
    if (source !== this.source) return;
    this.stats.events += 1;
    this.liveErrors = 0;
    this.liveBackoff = this.liveRetryAfter;
    try {
      switch (kind) {
        case 'reset': this.liveReset(event); break;
        case 'delta': this.liveDelta(event); break;
        case 'gone':
          this.closeLive();
          this.running = false;
          this.setMode('stopped', 'the viewer no longer exists');
          this.onError(new FeedHTTPError(404, `viewer ${this.viewer} no longer exists`));
          break;
        default:
          // shutdown: the server ends the stream next, which is no failure; the browser
          // reconnects with Last-Event-ID (to this server once it is back, or another replica).
          this.stats.shutdowns += 1;
          this.liveEnding = true;
          this.setMode('connecting', 'the server is shutting down');
      }
    } catch (error) {
      const before = this.document?.snapshot;
      if (error instanceof DeltaApplyError) console.error(`deltafeed: live ${kind} ${event.lastEventId} from ${before} did not apply: ${error.message}`);
      else this.onError(error);
      this.resync(error.message);
    }
  }

  liveReset(event) {
    const document = JSON.parse(event.data);
    if (event.lastEventId !== document.snapshot) throw new DeltaApplyError(`reset event ${event.lastEventId} carries snapshot ${document.snapshot}`);
    const held = this.document.snapshot;
    this.stats.resets += 1;
    this.document = document;
    this.view?.reset(clone(document));
    this.onFeed({ document, bytes: byteLength(event.data), reason: `the server sent the whole feed (it does not hold ${held})`, reset: true });
  }

  liveDelta(event) {
    const delta = JSON.parse(event.data);
    if (event.lastEventId !== delta.snapshot) throw new DeltaApplyError(`delta event ${event.lastEventId} carries snapshot ${delta.snapshot}`);
    const before = this.document;
    let shown;
    this.view?.begin();
    try {
      shown = applySequential(before, delta, before.snapshot, this.view);
    } finally {
      this.view?.end(shown ?? null);
    }
    checkChangedItems(before, shown);
    this.checkView(shown);
    this.document = shown;
    this.stats.deltas += 1;
    this.onDelta({
      sequential: delta, patch: null, document: shown, live: true,
      bytes: { sequential: byteLength(event.data), jsonpatch: null },
      feedBytes: byteLength(JSON.stringify(shown)),
    });
  }

  /** After a delta that did not apply: fetch the feed, then open the stream from it. */
  resync(reason) {
    this.closeLive();
    if (!this.running) return;
    this.setMode('connecting', reason);
    this.busy = (async () => {
      try {
        await this.fetchFeed(reason);
        this.openLive();
      } catch (error) {
        this.onError(error);
        this.liveTimer = setTimeout(() => this.resync(reason), Math.max(this.interval, 2000));
      } finally {
        this.busy = null;
      }
    })();
  }

  liveError(source) {
    if (source !== this.source) return;
    clearTimeout(this.openTimer);
    // A stream that stayed up a while before it broke is not a failure in a row.
    if (this.liveOpenedAt !== null && Date.now() - this.liveOpenedAt >= this.liveStable) this.liveErrors = 0;
    this.liveOpenedAt = null;
    const closed = source.readyState === EVENT_SOURCE_CLOSED;
    if (this.liveEnding && !closed) {
      this.liveEnding = false;
      this.armOpenTimer(source);
      return;
    }
    this.liveEnding = false;
    this.liveFailed(closed ? 'the server refused the live stream' : 'the live stream broke', closed);
  }

  /** Counts a failure; reconnects (ourselves when `reopen`, else the browser does), or falls back to polling. */
  liveFailed(reason, reopen) {
    this.liveErrors += 1;
    this.stats.liveErrors += 1;
    if (this.liveErrors >= this.liveMaxErrors) {
      this.fallBack(`${reason} (${this.liveErrors} failures in a row)`);
      return;
    }
    this.setMode('connecting', reason);
    if (reopen) {
      this.closeLive();
      this.liveTimer = setTimeout(() => this.openLive(), this.liveRetryDelay * this.liveErrors);
    } else {
      this.armOpenTimer(this.source);
    }
  }

  fallBack(reason) {
    this.closeLive();
    this.stats.fallbacks += 1;
    this.startPolling(reason);
    if (this.liveRetryAfter > 0) {
      const delay = this.liveBackoff;
      this.liveBackoff = Math.min(2 * this.liveBackoff, 600000);
      this.liveTimer = setTimeout(() => this.returnToLive(), delay);
    }
  }

  /** Stops polling (after the refresh in flight) and opens the stream again. */
  async returnToLive() {
    if (!this.running || !this.polling) return;
    this.polling = false;
    clearTimeout(this.timer);
    await this.busy?.catch(() => {});
    if (!this.running) return;
    this.liveErrors = 0;
    this.openLive();
  }

  /** Stops following the feed (a refresh in flight still completes). */
  stop() {
    this.running = false;
    this.polling = false;
    clearTimeout(this.timer);
    this.closeLive();
    this.setMode('stopped');
  }
}
