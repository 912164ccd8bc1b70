// The live feed page: a viewer picker, the feed (FeedView) kept current by FeedClient, and a
// panel listing each delta as it arrives. The page asks for the feed at its width, with its
// window's height as the viewport and the kinds FeedView renders (KINDS). Query:
// ?viewer=ID&width=320…1200, and
//   kinds=video,ad  ask for these kinds only (items and headers/footers; default: all of KINDS);
//   live=0       poll instead of following the live stream (Server-Sent Events);
//   interval=MS  how often to poll (when polling, by choice or as the fallback; default 1000);
//   live_retry=MS  after falling back to polling, when to try the live stream again (default 60000);
//   poll=0       fetch the feed once and follow nothing; animate=0  no animations.
// The badge beside the status says how the page follows the feed: live, polling or connecting.
// window.deltafeedDemo exposes the client and counters for the browser test.
import { FeedClient } from './feed-client.js';
import { FeedView } from './feed-view.js';

const WIDTHS = [320, 375, 390, 414, 600, 768, 1024, 1200];
// What FeedView draws: item kinds, then header/footer kinds. The server leaves out the rest.
const KINDS = ['header', 'video', 'ad', 'user', 'empty', 'section_title', 'see_all', 'sponsored'];
// The viewport heights the server takes (it places the prefetch hint two viewports from the end).
const MIN_VIEWPORT = 100;
const MAX_VIEWPORT = 4000;
const MIN_WIDTH = 320;
const MAX_WIDTH = 1200;
const $ = (id) => document.getElementById(id);
const parameters = new URLSearchParams(location.search);

function positiveInteger(text) {
  return /^[1-9][0-9]{0,17}$/.test(text ?? '') ? Number(text) : null;
}

function kib(bytes) {
  return bytes < 1024 ? `${bytes} B` : `${(bytes / 1024).toFixed(1)} KiB`;
}

function setStatus(text) {
  $('status').textContent = text;
}

const MODE_LABELS = { connecting: 'connecting…', live: 'live', polling: 'polling', stopped: 'stopped' };

function showMode(mode, reason) {
  const badge = $('mode');
  badge.hidden = false;
  badge.dataset.mode = mode;
  badge.textContent = MODE_LABELS[mode] ?? mode;
  badge.title = reason ?? (mode === 'live' ? 'every change is pushed over Server-Sent Events' : '');
}

function describeStep(step) {
  if (step.target === 'header' || step.target === 'footer') {
    const view = step.view ? ` ${step.view.patch ? `patch ${JSON.stringify(step.view.patch)}` : step.view.id}` : '';
    return `${step.op} s${step.section} ${step.target}${view}`;
  }
  const where = step.target === 'items' ? `s${step.section} items` : 'sections';
  const values = step.items ?? step.sections;
  const describe = (value) => (value.patch ? `patch ${JSON.stringify(value.patch)}` : value.id);
  const ids = values ? ` ${values.map(describe).join(', ')}` : '';
  if (step.op === 'move') return `${step.op} ${where} ${step.from} → ${step.to}`;
  return `${step.op} ${where} @${step.index}×${step.count}${ids}`;
}

function logDelta(number, { sequential, bytes, feedBytes }) {
  const entry = document.createElement('li');
  const head = document.createElement('div');
  const changes = sequential.change_count;
  head.textContent = `${changes} change${changes === 1 ? '' : 's'} → ${sequential.snapshot.slice(0, 8)}`;
  const sizes = document.createElement('div');
  sizes.className = 'sizes';
  const share = (value) => `${Math.max(0.1, (100 * value) / feedBytes).toFixed(1)} %`;
  const patch = bytes.jsonpatch === null ? 'pushed live' : `JSON Patch ${kib(bytes.jsonpatch)} (${share(bytes.jsonpatch)})`;
  sizes.textContent = `sequential ${kib(bytes.sequential)} (${share(bytes.sequential)}) · ${patch} · full feed ${kib(feedBytes)}`;
  const ops = document.createElement('ul');
  ops.className = 'ops';
  const shown = sequential.operations.slice(0, 12);
  for (const step of shown) {
    const line = document.createElement('li');
    line.className = `op-${step.op}`;
    line.textContent = describeStep(step);
    ops.append(line);
  }
  if (sequential.operations.length > shown.length) {
    const more = document.createElement('li');
    more.textContent = `… ${sequential.operations.length - shown.length} more`;
    ops.append(more);
  }
  // What the header changed besides the steps: new frames for sections kept in place, the hint.
  const layouts = Object.keys(sequential.section_layouts ?? {});
  if (layouts.length > 0) {
    const line = document.createElement('li');
    line.textContent = `layout ${layouts.map((index) => `s${index}`).join(', ')}`;
    ops.append(line);
  }
  if ('prefetch' in sequential) {
    const line = document.createElement('li');
    line.textContent = sequential.prefetch === null ? 'prefetch: none' : `prefetch at s${sequential.prefetch.index} (${sequential.prefetch.section})`;
    ops.append(line);
  }
  entry.append(head, sizes, ops);
  entry.value = number;
  const log = $('log');
  log.prepend(entry);
  while (log.children.length > 60) log.lastElementChild.remove();
}

async function showPeople() {
  const people = $('people');
  for (let id = 1; id <= 8; id++) {
    const response = await fetch(`/v1/users/${id}`);
    if (!response.ok) continue;
    const { user } = await response.json();
    const button = document.createElement('button');
    button.type = 'button';
    button.textContent = `${user.display_name} · @${user.handle} · #${user.id}`;
    button.addEventListener('click', () => open(user.id, Number($('width').value)));
    people.append(button);
  }
}

function open(viewer, width) {
  const query = new URLSearchParams(location.search);
  query.set('viewer', String(viewer));
  query.set('width', String(width));
  location.search = query.toString();
}

function setUpPicker(viewer, width) {
  const select = $('width');
  for (const value of new Set([...WIDTHS, width].sort((a, b) => a - b))) {
    const option = document.createElement('option');
    option.value = String(value);
    option.textContent = `${value} pt`;
    select.append(option);
  }
  select.value = String(width);
  if (viewer !== null) $('viewer').value = String(viewer);
  $('picker').addEventListener('submit', (event) => {
    event.preventDefault();
    const chosen = positiveInteger($('viewer').value);
    if (chosen === null) {
      setStatus('the viewer is a positive integer id');
      return;
    }
    open(chosen, Number(select.value));
  });
}

async function main() {
  const viewer = positiveInteger(parameters.get('viewer'));
  const requestedWidth = positiveInteger(parameters.get('width'));
  const width = Math.min(MAX_WIDTH, Math.max(MIN_WIDTH, requestedWidth ?? 390));
  const interval = Math.max(50, positiveInteger(parameters.get('interval')) ?? 1000);
  const liveRetryAfter = Math.max(1000, positiveInteger(parameters.get('live_retry')) ?? 60000);
  // Names the server does not know it ignores; an empty list would be a 400, so it means the default.
  const asked = (parameters.get('kinds') ?? '').split(',').map((kind) => kind.trim()).filter((kind) => /^[a-z0-9_]+$/i.test(kind));
  const kinds = asked.length > 0 ? asked : KINDS;
  const viewport = Math.min(MAX_VIEWPORT, Math.max(MIN_VIEWPORT, Math.round(window.innerHeight)));
  setUpPicker(viewer, width);
  const demo = { client: null, viewer, width, kinds, viewport, deltas: 0, feeds: 0, errors: [], modes: [], supplementarySteps: 0, sectionLayouts: 0 };
  window.deltafeedDemo = demo;
  if (viewer === null) {
    await showPeople();
    demo.ready = true;
    return;
  }
  $('choose').hidden = true;
  $('phone').hidden = false;
  $('panel').hidden = false;
  const phone = $('phone');
  phone.style.width = `${width + 2}px`;
  $('feed').style.width = `${width}px`;
  const view = new FeedView($('feed'), { animate: parameters.get('animate') !== '0' });
  let deltaBytes = 0;
  let feedBytesTotal = 0;
  const client = new FeedClient({
    viewer, width, kinds, viewport, interval, view, live: parameters.get('live') !== '0', liveRetryAfter,
    onFeed: ({ reason, reset }) => {
      demo.feeds += 1;
      if (reason === null) setStatus(`viewer ${viewer} at ${width} pt${asked.length > 0 ? ` (${kinds.join(', ')} only)` : ''}: waiting for writes`);
      else setStatus(reset ? `replaced the feed: ${reason}` : `fetched the feed again: ${reason}`);
    },
    onMode: ({ mode, reason }) => {
      demo.modes.push(mode);
      showMode(mode, reason);
      if (mode === 'polling' && reason) setStatus(`polling every ${interval} ms: ${reason}`);
      if (mode === 'connecting' && reason) setStatus(`reconnecting: ${reason}`);
    },
    onDelta: (delta) => {
      demo.deltas += 1;
      demo.supplementarySteps += delta.sequential.operations.filter((step) => step.target === 'header' || step.target === 'footer').length;
      demo.sectionLayouts += Object.keys(delta.sequential.section_layouts ?? {}).length;
      deltaBytes += delta.bytes.sequential;
      feedBytesTotal += delta.feedBytes;
      logDelta(demo.deltas, delta);
      $('totals').textContent = `${demo.deltas} deltas, ${kib(deltaBytes)} sequential against ${kib(feedBytesTotal)} of full feeds (${((100 * deltaBytes) / feedBytesTotal).toFixed(1)} %)`;
      setStatus(`snapshot ${delta.document.snapshot.slice(0, 8)}`);
    },
    onError: (error) => {
      demo.errors.push(String(error.message ?? error));
      setStatus(`retrying: ${error.message ?? error}`);
      console.warn('deltafeed:', error);
    },
  });
  demo.client = client;
  if (parameters.get('poll') === '0') {
    await client.fetchFeed();
  } else {
    await client.start();
  }
  demo.ready = true;
}

main().catch((error) => {
  setStatus(`could not start: ${error.message}`);
  console.error('deltafeed demo:', error);
});
