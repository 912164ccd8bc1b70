// Applies the golden delta fixtures (Tests/Fixtures/deltas/*.json) with the web client's own
// apply functions, as the demo page runs them: the sequential form step by step to the document
// (calling a ListUpdateCallback-style listener) and the JSON Patch form (RFC 6902) to a copy.
// Both must give the fixture's page after — sections, items, headers and footers, layouts, the
// prefetch hint — and every item, header and footer of both pages must hash to its version as
// the client computes it, and every layout must have a frame per item and per header/footer.
// The listener must be told of every step, header and footer steps included. FeedWire's and
// ListDiff's test targets apply the same files. Then what must be refused: a JSON Patch whose
// last operation fails throws and leaves the document it was given unchanged, and layouts whose
// frames do not match their items are refused (checkLayouts, applySequential). Run by
// scripts/test; `node scripts/apply-fixtures.mjs` on its own. Exits 1 on a mismatch.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The module as the page loads it, imported from its text: a `.js` file outside a
// `"type": "module"` package is CommonJS to older Node releases, a data: URL is a module to all.
const clientSource = readFileSync(join(root, 'Sources', 'DeltaFeedServer', 'Demo', 'feed-client.js'), 'utf8');
const { applyJSONPatch, applySequential, checkLayouts, documentDifference, itemVersion, jsonEqual } = await import(
  `data:text/javascript;charset=utf-8,${encodeURIComponent(clientSource)}`
);
const directory = join(root, 'Tests', 'Fixtures', 'deltas');
const names = readdirSync(directory).filter((name) => name.endsWith('.json')).sort();
let passed = 0;
let failed = 0;

function check(name, form, rebuilt, after) {
  const difference = documentDifference(rebuilt, after) ?? (jsonEqual(rebuilt, after) ? null : 'the documents differ');
  if (difference === null) {
    passed += 1;
  } else {
    failed += 1;
    console.error(`FAIL ${name} ${form}: ${difference}`);
  }
}

for (const name of names) {
  const fixture = JSON.parse(readFileSync(join(directory, name), 'utf8'));
  // Every item, header and footer the server sent hashes to its version as the client computes
  // it (what a patch is checked against).
  const mismatched = [fixture.before, fixture.after]
    .flatMap((page) => page.sections.flatMap((section) => [...section.items, section.header, section.footer].filter(Boolean)))
    .filter((item) => itemVersion(item) !== item.version).map((item) => `${item.id} ${item.version} ≠ ${itemVersion(item)}`);
  if (mismatched.length === 0) passed += 1;
  else {
    failed += 1;
    console.error(`FAIL ${name} item versions: ${mismatched.join(', ')}`);
  }
  // Both pages' layouts match their sections (a frame per item, per header and per footer).
  try {
    checkLayouts(fixture.before);
    checkLayouts(fixture.after);
    passed += 1;
  } catch (error) {
    failed += 1;
    console.error(`FAIL ${name} layouts: ${error.message}`);
  }
  for (const [form, apply] of [
    ['sequential', (before, delta) => {
      let calls = 0;
      const listener = new Proxy({}, { get: () => () => { calls += 1; } });
      const rebuilt = applySequential(before, delta, before.snapshot, listener);
      if (calls !== delta.operations.length) throw new Error(`the listener was called ${calls} times for ${delta.operations.length} steps`);
      return rebuilt;
    }],
    ['jsonpatch', (before, delta) => applyJSONPatch(before, delta.patch)],
  ]) {
    try {
      const before = structuredClone(fixture.before);
      check(name, form, apply(before, fixture.deltas[form]), fixture.after);
    } catch (error) {
      failed += 1;
      console.error(`FAIL ${name} ${form}: ${error.message}`);
    }
  }
}
// What must be refused: a patch whose last operation fails throws and leaves the document it was
// given as it was (never half-applied, README), and frames that do not match their items are
// refused by checkLayouts and by applySequential (a stale layout would draw items on top of each
// other).
function refuses(name, body) {
  try {
    body();
  } catch (error) {
    if (error?.name === 'DeltaApplyError') {
      passed += 1;
      return error;
    }
    failed += 1;
    console.error(`FAIL ${name}: threw ${error?.name}: ${error?.message}, not a DeltaApplyError`);
    return error;
  }
  failed += 1;
  console.error(`FAIL ${name}: not refused`);
  return null;
}

// Each fixture is read again below: nothing the loops above did to theirs carries over.
for (const name of names) {
  const fixture = JSON.parse(readFileSync(join(directory, name), 'utf8'));
  const patch = fixture.deltas.jsonpatch.patch;
  const firstSection = fixture.before.sections[0];
  for (const [what, last] of [
    ['a failing test', { op: 'test', path: '/snapshot', value: `not ${fixture.before.snapshot}` }],
    ['a replace of a missing member', { op: 'replace', path: `/sections/0/no_such_member`, value: 1 }],
    ['a replace past the last item', { op: 'replace', path: `/sections/0/items/${firstSection.items.length + 5}`, value: {} }],
  ]) {
    const document = structuredClone(fixture.before);
    const before = structuredClone(document);
    refuses(`${name} jsonpatch ending in ${what}`, () => applyJSONPatch(document, [...patch, last]));
    check(`${name} jsonpatch ending in ${what}:`, 'the document passed in changed', document, before);
  }
  // A section with a layout: one frame too few, one too many, and a header/footer frame missing.
  const laidOut = fixture.before.sections.findIndex((section) => section.layout?.frames?.length > 0);
  if (laidOut < 0) {
    failed += 1;
    console.error(`FAIL ${name}: no section with frames to break`);
    continue;
  }
  const section = fixture.before.sections[laidOut];
  for (const [what, breakLayout] of [
    ['one frame too few', (layout) => layout.frames.pop()],
    ['one frame too many', (layout) => layout.frames.push(structuredClone(layout.frames[0]))],
    ...['header', 'footer'].filter((element) => section[element] !== undefined).map((element) => [`no ${element} frame`, (layout) => delete layout[element]]),
  ]) {
    const document = structuredClone(fixture.before);
    breakLayout(document.sections[laidOut].layout);
    refuses(`${name} checkLayouts with ${what} in section ${section.id}`, () => checkLayouts(document));
  }
}
// A sequential delta that changes a section's items without its section_layouts leaves its frames
// stale: applySequential refuses the result, and the document passed in is unchanged.
let withLayouts = 0;
for (const name of names) {
  const fixture = JSON.parse(readFileSync(join(directory, name), 'utf8'));
  const delta = fixture.deltas.sequential;
  if (Object.keys(delta.section_layouts ?? {}).length === 0) continue;
  withLayouts += 1;
  const stale = structuredClone(delta);
  delete stale.section_layouts;
  const document = structuredClone(fixture.before);
  const before = structuredClone(document);
  const error = refuses(`${name} sequential without its section_layouts`, () => applySequential(document, stale, document.snapshot));
  if (error && !/frame/.test(error.message)) {
    failed += 1;
    console.error(`FAIL ${name} sequential without its section_layouts: refused for another reason: ${error.message}`);
  }
  check(`${name} sequential without its section_layouts:`, 'the document passed in changed', document, before);
}
if (withLayouts === 0) {
  failed += 1;
  console.error('no fixture has section_layouts to leave out');
}
if (names.length === 0) {
  failed += 1;
  console.error(`no fixtures in ${directory}`);
}
console.log(`apply fixtures (web client): ${passed} passed, ${failed} failed, ${names.length} fixtures`);
process.exit(failed === 0 ? 0 : 1);
