"""The browser test of the live feed page (/demo), run by scripts/browser-test.

Starts deltafeed on a free loopback port with a small seeded store in a temporary folder,
opens /demo for one viewer in headless Chromium (Playwright driving Debian's /usr/bin/chromium),
and performs random writes through the API. The page follows the feed over the live route
(GET …/feed/live, Server-Sent Events). After each write that changes the viewer's feed it waits
for the page to apply the pushed delta (and its animations to end), then checks:

  - the page's DOM (section ids, item ids in order, each item's visible text and box, each
    section's height, its header and footer with their text and box, the section the prefetch
    hint names) equals the same feed rendered from scratch by a second page that fetched it fresh;
  - the DOM's ids equal the fresh feed JSON's, each video shows its title, each section shows a
    header and a footer exactly where the JSON has one, with the text its kind calls for
    ("See all (N)" with N the users in the carousel, "Sponsored · advertiser");
  - every item's box (relative to its section's element, the carousel's scroll added back) is
    its frame in the fresh feed's layout, each header and footer is at its frame, each section
    is as high as its layout says, and the carousel scrolls sideways over its content_width
    while no other section scrolls;
  - no two items of a section overlap, and outside the carousel every item, header and footer
    lies within the page's width;
  - the document the page holds equals the fresh GET of the feed (same kinds, width and
    viewport), member for member: headers, footers, layouts and the prefetch hint included;
  - the page applied a delta (it did not fetch the whole feed again).

Every feed, delta and live request of the pages carries kinds= (the eight kinds the page
renders), width and viewport (its window's height). The first render shows the suggestions'
title and "See all" footer and each ad slot's "Sponsored" footer, and the carousel scrolls to
its last user; a page opened with kinds=video asks for video only and shows only video items and
no header or footer, and follows a write that way; a new viewer who follows all but three users
sees a carousel of three, and as follows and unfollows grow it, shrink it, empty it and bring it
back, the page follows each delta live (new layouts, patched "See all" footers) with the checks
above and no refetch. The random writes include advertiser edits (the ad slots' footers).

At the end: no console errors or page errors in any page, no refetch at all, one live event
and one delta per feed change, the page in live mode ("live" in its status) and no request of
/feed/delta at all; `deltafeed simulate` drives the page the same way, and waits out a 503's Retry-After (through
a loopback proxy that refuses its first write); a page whose JSON Patch answers
are corrupted notices the disagreement and refetches, and so does one that gets a 410; the
README's example, run verbatim, follows a write; the page lays out two grid columns inside its
width at 320 and 1200 points.

The live route on its own: a like (PUT /v1/videos/{id}/likes/{user}) reaches the live page
with no request from it, and so does a burst of likes (coalesced by the server); the polling
fallback follows writes when forced (live=0) and in a browser without EventSource; a page
whose live route answers 503 falls back to polling, follows a write, and returns to the live
route later (live_retry); a page handed a tampered live event (a new video's title altered, its
version kept) refuses it, fetches the feed again, says why, and goes on live; and when the server shuts down (the page gets `event: shutdown`) and
starts again on the same port, the page reconnects on its own and follows the next write
without polling. Saves before/after screenshots of one delta
under .build/browser-test/. Prints "browser: N passed, M failed" and exits non-zero on failure.

    python3 scripts/browser_test.py --binary .build/debug/deltafeed [--writes 50] [--seed N]
"""

import argparse
import http.server
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

from playwright.sync_api import sync_playwright

TOKEN = "browser-test-token"
VIEWER = 1
WIDTH = 390
# The pages' window height: the page sends it as `viewport`, which places the prefetch hint.
VIEWPORT = 1000
CHROMIUM = "/usr/bin/chromium"
# The kinds the page renders and asks for (items, then header/footer views).
KINDS = "header,video,ad,user,empty,section_title,see_all,sponsored"


def feed_query(width=WIDTH, kinds=KINDS):
    """The query the page asks the feed with: a fresh GET must use the same to get the same snapshot."""
    return f"width={width}&viewport={VIEWPORT}&kinds={kinds}"

READY = "() => window.deltafeedDemo !== undefined && window.deltafeedDemo.ready === true"

# Reads the page's DOM as the test compares it: live elements only (ghosts fading out carry no
# ids). Boxes are relative to the section's element, with any sideways scroll of the elements
# between added back (so a carousel scrolled by hand still reads as its frames); `scrollers`
# are the section's elements that scroll sideways.
EXTRACT = """() => [...document.querySelectorAll('#feed [data-section-id]')].map(section => {
  const box = section.getBoundingClientRect();
  const frame = (node) => {
    let scrolled = 0;
    for (let parent = node.parentElement; parent !== section; parent = parent.parentElement) scrolled += parent.scrollLeft;
    const r = node.getBoundingClientRect();
    return {x: r.left - box.left + scrolled, y: r.top - box.top, width: r.width, height: r.height};
  };
  const view = (slot) => {
    const node = section.querySelector(`[data-supplementary="${slot}"]`);
    return node && {id: node.dataset.viewId, text: node.innerText.trim(), frame: frame(node)};
  };
  return {
    id: section.dataset.sectionId, height: box.height, width: box.width, prefetch: section.hasAttribute('data-prefetch'),
    header: view('header'), footer: view('footer'),
    scrollers: [...section.querySelectorAll('*')].filter(node => ['auto', 'scroll'].includes(getComputedStyle(node).overflowX))
      .map(node => ({scrollWidth: node.scrollWidth, clientWidth: node.clientWidth})),
    items: [...section.querySelectorAll('[data-item-id]')].map(item => ({id: item.dataset.itemId, text: item.innerText, kind: item.className, frame: frame(item)}))
  };
})"""

# No animation running (FLIP slides move boxes with transforms until they end).
SETTLED = "() => document.getAnimations().length === 0"


class Server:
    """deltafeed serve on a free loopback port with a seeded temporary store; stopped by PID."""

    def __init__(self, binary):
        self.binary = binary
        self.work = tempfile.mkdtemp(prefix="deltafeed-browser.")
        self.process = None
        self.port = None

    def start(self):
        """Seeds the store and starts the server on a free port; after terminate(), starts it
        again on the same store and port."""
        store = os.path.join(self.work, "store.sqlite")
        if self.port is None:
            subprocess.run([self.binary, "seed", "--db", store, "--users", "100", "--videos", "600", "--ads", "6", "--seed", "7"],
                           check=True, stdout=subprocess.DEVNULL)
        port, self.port = self.port or 0, None
        self.starts = getattr(self, "starts", 0) + 1
        self.log_path = os.path.join(self.work, f"server-{self.starts}.log")
        log = open(self.log_path, "w")
        self.process = subprocess.Popen(
            [self.binary, "serve", "--db", store, "--host", "127.0.0.1", "--port", str(port), "--threads", "2",
             "--admin-token", TOKEN, "--log-level", "notice"], stdout=log, stderr=subprocess.STDOUT)
        deadline = time.time() + 30
        while time.time() < deadline and self.port is None:
            match = re.search(r"listening on http://127\.0\.0\.1:(\d+) ", open(self.log_path).read())
            if match:
                self.port = int(match.group(1))
            elif self.process.poll() is not None:
                break
            else:
                time.sleep(0.1)
        if self.port is None:
            raise RuntimeError("the server did not start; its log:\n" + open(self.log_path).read())
        self.base = f"http://127.0.0.1:{self.port}"

    def terminate(self):
        """SIGTERM (the server sends every live stream `event: shutdown`), and waits for the exit."""
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def stop(self):
        self.terminate()
        shutil.rmtree(self.work, ignore_errors=True)

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.base + path, data=data, method=method,
                                         headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text else None
        except urllib.error.HTTPError as error:
            return error.code, error.read().decode()

    def feed(self, query=None, viewer=VIEWER):
        status, feed = self.call("GET", f"/v1/users/{viewer}/feed?{query or feed_query()}")
        if status != 200:
            raise RuntimeError(f"GET feed answered {status}: {feed}")
        return feed


def random_write(rng, feed, kind=None):
    """One write drawn from what the feed shows (of `kind` if given): (kind, method, path, body)."""
    videos = [item["data"] for section in feed["sections"] if section["kind"].startswith("video_grid")
              for item in section["items"] if item["kind"] == "video"]
    authors = [video["author"]["id"] for video in videos[:6] if video["author"]]
    suggested = [item["data"]["user"]["id"] for section in feed["sections"] if section["kind"] == "follow_suggestions"
                 for item in section["items"]]
    ads = [item["data"]["id"] for section in feed["sections"] for item in section["items"] if item["kind"] == "ad"]
    choices = ["like"] * 4 + ["title", "video", "video", "delete"]
    if suggested:
        choices += ["follow"]
    if authors:
        choices += ["unfollow"]
    if ads:
        choices += ["ad", "advertiser"]
    kind = kind or rng.choice(choices)
    video = rng.choice(videos)["video"]
    if kind == "like":
        return kind, "PATCH", f"/v1/videos/{video['id']}", {"like_count": video["like_count"] + rng.randint(1, 500)}
    if kind == "title":
        return kind, "PATCH", f"/v1/videos/{video['id']}", {"title": f"Edited in the browser test #{rng.randint(1, 10**6)}"}
    if kind == "delete":
        return kind, "DELETE", f"/v1/videos/{video['id']}", None
    if kind == "video":
        author = rng.choice(authors) if authors else rng.randint(1, 100)
        return kind, "POST", "/v1/videos", {"author_id": author, "title": f"Fresh upload {rng.randint(1, 10**6)}",
                                            "thumbnail_url": "https://cdn.deltafeed.example/thumbs/t.jpg", "duration_seconds": rng.randint(5, 300)}
    if kind == "follow":
        return kind, "PUT", f"/v1/users/{VIEWER}/follows/{rng.choice(suggested)}", None
    if kind == "unfollow":
        return kind, "DELETE", f"/v1/users/{VIEWER}/follows/{rng.choice(authors)}", None
    if kind == "advertiser":  # the ad slot's "Sponsored · advertiser" footer changes with it
        return kind, "PATCH", f"/v1/ads/{rng.choice(ads)}", {"advertiser": f"Brand {rng.randint(1, 10**6)}"}
    return kind, "PATCH", f"/v1/ads/{rng.choice(ads)}", {"title": f"Sale ends soon {rng.randint(1, 10**6)}"}


def wait_until(page, expression, arg=None, timeout=10.0):
    """Polls `expression` (a function of `arg`) in the page until it is true. Playwright's own
    wait_for_function evaluates strings with eval, which the page's Content-Security-Policy
    rightly refuses; page.evaluate goes through the debugger protocol and is not affected."""
    deadline = time.time() + timeout
    while True:
        if page.evaluate(expression, arg):
            return
        if time.time() > deadline:
            raise TimeoutError(f"{expression} stayed false for {timeout} s")
        time.sleep(0.03)


def busy_proxy(target):
    """A loopback proxy to `target` that answers the first write with 503 and Retry-After: 1,
    as a server whose writes queue is full would. Returns (server, its base URL)."""
    state = {"refused": 0}

    class Handler(http.server.BaseHTTPRequestHandler):
        def forward(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            if self.command != "GET" and state["refused"] == 0:
                state["refused"] += 1
                payload = b'{"error":{"code":"overloaded","message":"busy"}}'
                self.send_response(503)
                self.send_header("Retry-After", "1")
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
                return
            request = urllib.request.Request(target + self.path, data=body, method=self.command,
                                             headers={k: v for k, v in self.headers.items() if k.lower() in ("authorization", "content-type")})
            try:
                with urllib.request.urlopen(request, timeout=10) as response:
                    status, payload = response.status, response.read()
            except urllib.error.HTTPError as error:
                status, payload = error.code, error.read()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = forward

        def log_message(self, *arguments):
            pass

    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=proxy.serve_forever, daemon=True).start()
    return proxy, f"http://127.0.0.1:{proxy.server_address[1]}"


def readme_example():
    """The HTML block after the readme-example marker in README.md."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    match = re.search(r"<!-- readme-example[^>]*-->\n```html\n(.*?)```", text, re.S)
    if not match:
        raise RuntimeError("README.md has no readme-example block")
    return match.group(1)


def wait_for_message(page, messages, prefix, timeout=10.0):
    """Waits until a console message starting with `prefix` arrived (Playwright's sync API
    delivers events only while it is called, hence wait_for_timeout rather than sleep)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if any(message.startswith(prefix) for message in messages):
            return True
        page.wait_for_timeout(50)
    return False


class Checks:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, condition, name, detail=""):
        if condition:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}{': ' + detail if detail else ''}", file=sys.stderr)
        return condition


def document_difference(a, b, path=""):
    """Where two JSON values first differ, as a path and the two values, or None."""
    if type(a) is not type(b):
        return f"{path or '/'}: {json.dumps(a)[:120]} against {json.dumps(b)[:120]}"
    if isinstance(a, dict):
        for key in sorted(set(a) | set(b)):
            if key not in a or key not in b:
                return f"{path}/{key} is only in {'the page' if key in a else 'the fresh feed'}"
            found = document_difference(a[key], b[key], f"{path}/{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        if len(a) != len(b):
            return f"{path}: {len(a)} elements against {len(b)}"
        for index, (x, y) in enumerate(zip(a, b)):
            found = document_difference(x, y, f"{path}/{index}")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {json.dumps(a)[:120]} against {json.dumps(b)[:120]}"


def shown_videos(feed):
    """The videos the feed shows, as {id: like_count}."""
    return {item["data"]["video"]["id"]: item["data"]["video"]["like_count"] for section in feed["sections"]
            for item in section["items"] if item["kind"] == "video"}


def same_frame(a, b):
    """Two frames ({x, y, width, height}) equal within half a point (boxes are measured in floats)."""
    return all(abs(a[key] - b[key]) <= 0.5 for key in ("x", "y", "width", "height"))


def show_frame(frame):
    return "none" if frame is None else "({x:g}, {y:g}, {width:g}×{height:g})".format(**frame)


def first_difference(live, fresh):
    """Where the live page's DOM differs from a fresh render's: ids, texts, boxes, heights,
    headers and footers, the prefetch mark."""
    if len(live) != len(fresh):
        return f"{len(live)} sections on the page, {len(fresh)} rendered fresh: {[s['id'] for s in live]} vs {[s['id'] for s in fresh]}"
    for mine, theirs in zip(live, fresh):
        if mine["id"] != theirs["id"]:
            return f"section {mine['id']} where a fresh render has {theirs['id']}"
        if [i["id"] for i in mine["items"]] != [i["id"] for i in theirs["items"]]:
            return f"section {mine['id']} items {[i['id'] for i in mine['items']]} vs {[i['id'] for i in theirs['items']]}"
        if abs(mine["height"] - theirs["height"]) > 0.5:
            return f"section {mine['id']} is {mine['height']:g} high, {theirs['height']:g} in a fresh render"
        if mine["prefetch"] != theirs["prefetch"]:
            return f"section {mine['id']} is {'' if mine['prefetch'] else 'not '}marked for prefetch, {'' if theirs['prefetch'] else 'not '}in a fresh render"
        for slot in ("header", "footer"):
            a, b = mine[slot], theirs[slot]
            if (a is None) != (b is None) or (a and (a["id"], a["text"]) != (b["id"], b["text"])):
                return f"section {mine['id']} {slot} {a and (a['id'], a['text'])} vs {b and (b['id'], b['text'])} in a fresh render"
            if a and not same_frame(a["frame"], b["frame"]):
                return f"section {mine['id']} {slot} at {show_frame(a['frame'])}, a fresh render {show_frame(b['frame'])}"
        for a, b in zip(mine["items"], theirs["items"]):
            if a["text"] != b["text"]:
                return f"item {a['id']} shows {a['text']!r}, a fresh render {b['text']!r}"
            if not same_frame(a["frame"], b["frame"]):
                return f"item {a['id']} at {show_frame(a['frame'])}, a fresh render {show_frame(b['frame'])}"
    return None


def view_text(view):
    """What a header or footer view must show, by its kind."""
    data = view["data"]
    if view["kind"] == "section_title":
        return data["title"]
    if view["kind"] == "see_all":
        return f"See all ({data['count']})"
    if view["kind"] == "sponsored":
        return f"Sponsored · {data['advertiser']}"
    raise ValueError(f"no text known for a {view['kind']} view")


def json_difference(live, feed):
    """Where the DOM differs from the feed JSON: ids, video titles, headers and footers (present
    exactly where the JSON has them, showing what their kind calls for), the prefetch mark."""
    expected = [(s["id"], [i["id"] for i in s["items"]]) for s in feed["sections"]]
    shown = [(s["id"], [i["id"] for i in s["items"]]) for s in live]
    if shown != expected:
        return f"the DOM shows {shown}, the feed JSON says {expected}"
    texts = {i["id"]: i["text"] for s in live for i in s["items"]}
    for section in feed["sections"]:
        for item in section["items"]:
            if item["kind"] == "video" and item["data"]["video"]["title"] not in texts[item["id"]]:
                return f"{item['id']} does not show its title {item['data']['video']['title']!r}"
    hinted = (feed.get("prefetch") or {}).get("section")
    for mine, section in zip(live, feed["sections"]):
        for slot in ("header", "footer"):
            view, shown_view = section.get(slot), mine[slot]
            if (view is None) != (shown_view is None):
                return f"section {section['id']} {'has' if view else 'has no'} {slot} in the JSON, {'none' if view else 'one'} on the page"
            if view and (shown_view["id"], shown_view["text"]) != (view["id"], view_text(view)):
                return f"section {section['id']} {slot} shows {shown_view['id']} {shown_view['text']!r}, the JSON says {view['id']} {view_text(view)!r}"
            if view and view["kind"] == "see_all" and view["data"]["count"] != len(section["items"]):
                return f"section {section['id']} footer counts {view['data']['count']}, the carousel has {len(section['items'])} users"
        if mine["prefetch"] != (section["id"] == hinted):
            return f"section {section['id']} is {'' if mine['prefetch'] else 'not '}marked for prefetch, the feed's hint is {feed.get('prefetch')}"
    return None


def frame_difference(live, feed):
    """Where the DOM's boxes differ from the fresh feed's layout: each item at its frame, header
    and footer at theirs, each section's height, and the carousel (alone) scrolling sideways
    over its content_width."""
    for mine, section in zip(live, feed["sections"]):
        layout = section.get("layout")
        if layout is None:
            return f"section {section['id']} has no layout in the feed JSON (asked with width)"
        if abs(mine["height"] - layout["height"]) > 0.5:
            return f"section {section['id']} is {mine['height']:g} high, its layout says {layout['height']}"
        if len(layout["frames"]) != len(mine["items"]):
            return f"section {section['id']} shows {len(mine['items'])} items, its layout has {len(layout['frames'])} frames"
        for item, frame in zip(mine["items"], layout["frames"]):
            if not same_frame(item["frame"], frame):
                return f"item {item['id']} of {section['id']} at {show_frame(item['frame'])}, its frame is {show_frame(frame)}"
        for slot in ("header", "footer"):
            if mine[slot] and not same_frame(mine[slot]["frame"], layout.get(slot) or {}):
                return f"the {slot} of {section['id']} at {show_frame(mine[slot]['frame'])}, its frame is {show_frame(layout.get(slot))}"
        if layout.get("scroll") == "horizontal":
            wide = [s for s in mine["scrollers"] if s["scrollWidth"] > s["clientWidth"]]
            if len(mine["scrollers"]) != 1 or (layout["content_width"] > mine["width"] and (len(wide) != 1 or abs(wide[0]["scrollWidth"] - layout["content_width"]) > 0.5)):
                return f"the carousel {section['id']} scrolls as {mine['scrollers']}, its content_width is {layout['content_width']}"
        elif mine["scrollers"]:
            return f"section {section['id']} scrolls sideways ({mine['scrollers']}), its layout does not"
    return None


def overlap_difference(live):
    """Two items of one section whose boxes overlap (by more than half a point), or None."""
    for section in live:
        boxes = [(item["id"], item["frame"]) for item in section["items"]]
        for n, (a, p) in enumerate(boxes):
            for b, q in boxes[n + 1:]:
                if (p["x"] + 0.5 < q["x"] + q["width"] and q["x"] + 0.5 < p["x"] + p["width"]
                        and p["y"] + 0.5 < q["y"] + q["height"] and q["y"] + 0.5 < p["y"] + p["height"]):
                    return f"in {section['id']}, {a} at {show_frame(p)} overlaps {b} at {show_frame(q)}"
    return None


def width_difference(live, feed, width):
    """An element outside the page's width: every section is `width` wide, and outside the
    carousel every item, header and footer lies within it."""
    for mine, section in zip(live, feed["sections"]):
        if abs(mine["width"] - width) > 0.5:
            return f"section {section['id']} is {mine['width']:g} wide, the page {width}"
        carousel = (section.get("layout") or {}).get("scroll") == "horizontal"
        framed = [(slot, mine[slot]["frame"]) for slot in ("header", "footer") if mine[slot]]
        framed += [] if carousel else [(item["id"], item["frame"]) for item in mine["items"]]
        for name, frame in framed:
            if frame["x"] < -0.5 or frame["x"] + frame["width"] > width + 0.5:
                return f"{name} of {section['id']} at {show_frame(frame)} is outside the width {width}"
    return None


def request_difference(urls, kinds=KINDS, width=WIDTH):
    """The first feed, delta or live request in `urls` without the page's kinds, width and viewport."""
    wanted = {"kinds": [kinds], "width": [str(width)], "viewport": [str(VIEWPORT)]}
    for url in urls:
        if re.search(r"/feed(/delta|/live)?\?", url):
            query = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query)
            if any(query.get(name) != value for name, value in wanted.items()):
                return f"{url} does not ask with kinds={kinds}, width={width}, viewport={VIEWPORT}"
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--binary", required=True)
    parser.add_argument("--writes", type=int, default=50)
    parser.add_argument("--seed", type=int, default=int(os.environ.get("BROWSER_SEED", "0")) or random.randrange(1, 10**6))
    parser.add_argument("--artifacts", default=".build/browser-test")
    arguments = parser.parse_args()
    os.makedirs(arguments.artifacts, exist_ok=True)
    rng = random.Random(arguments.seed)
    checks = Checks()
    started = time.time()
    server = Server(arguments.binary)
    console_errors = []
    deltas_expected = 0
    supplementary_steps = 0  # header/footer steps the live page applied (counted by the page)
    kinds = {}
    try:
        server.start()
        print(f"browser test: server on {server.base}, viewer {VIEWER}, width {WIDTH}, {arguments.writes} writes, seed {arguments.seed} (BROWSER_SEED={arguments.seed} repeats it)")
        with sync_playwright() as playwright:
            # Two pages side by side: keep Chromium from throttling the one in the background.
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=[
                "--no-sandbox", "--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                "--disable-backgrounding-occluded-windows"])

            def new_page():
                return browser.new_context(viewport={"width": 1000, "height": 1000}).new_page()

            def watch(page, name, failed_requests_expected=False):
                """Records console errors and page errors of `page`. A page whose requests are
                made to fail (a 503, a server restarting) may log those failures, and only them."""
                def console(message):
                    if message.type != "error":
                        return
                    if failed_requests_expected and re.search(r"Failed to load resource|net::ERR_|EventSource", message.text):
                        return
                    console_errors.append(f"{name}: {message.text}")
                page.on("console", console)
                page.on("pageerror", lambda error: console_errors.append(f"{name}: {error}"))
                return page

            def track(page):
                """The URLs `page` requests, in order, for the checks on which routes it used."""
                requests = []
                page.on("request", lambda request: requests.append(request.url))
                return requests

            def routes_since(requests, mark):
                """How many requests after position `mark` went to the live route, the delta route, and the feed."""
                later = requests[mark:]
                return {"live": sum("/feed/live?" in url for url in later), "delta": sum("/feed/delta?" in url for url in later),
                        "feed": sum(re.search(r"/feed\?", url) is not None for url in later)}

            live = watch(new_page(), "live page", failed_requests_expected=True)
            live_requests = track(live)
            fresh = watch(new_page(), "fresh page")
            live.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&interval=100")
            wait_until(live, READY, timeout=15)
            fresh_url = f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&poll=0&animate=0"
            try:
                wait_until(live, "() => window.deltafeedDemo.client.mode === 'live'")
            except TimeoutError:
                pass
            checks.check(live.evaluate("window.deltafeedDemo.client.mode") == "live" and live.inner_text("#mode") == "live",
                         "the page follows the live route and says so",
                         f"mode {live.evaluate('window.deltafeedDemo.client.mode')}, badge {live.inner_text('#mode')!r}")

            def verify(label, feed, page=None, extra="", viewer=VIEWER):
                """Waits for `page` (the live page) to show `feed`, then compares it with a fresh
                render (of the demo URL for `viewer`, with `extra` too), the document it holds
                with the feed's JSON, and its boxes with the feed's frames."""
                page = page or live
                try:
                    wait_until(page, "s => window.deltafeedDemo.client.document.snapshot === s", feed["snapshot"])
                except Exception as error:
                    shown = page.evaluate("window.deltafeedDemo.client.document.snapshot")
                    return checks.check(False, label, f"the page stayed at snapshot {shown}, the feed is {feed['snapshot']} ({str(error).splitlines()[0]})")
                held = page.evaluate("window.deltafeedDemo.client.document")
                if not checks.check(held == feed, label, "the document the page holds differs from a fresh GET of the feed: "
                                    + (document_difference(held, feed) or "")):
                    return False
                fresh.goto(fresh_url.replace(f"viewer={VIEWER}&", f"viewer={viewer}&") + extra)
                wait_until(fresh, READY)
                fresh_snapshot = fresh.evaluate("window.deltafeedDemo.client.document.snapshot")
                if not checks.check(fresh_snapshot == feed["snapshot"], label, f"the fresh page fetched {fresh_snapshot}, expected {feed['snapshot']}"):
                    return False
                try:
                    wait_until(page, SETTLED, timeout=5)
                except TimeoutError:
                    pass  # the comparison below says what is off
                shown, rendered = page.evaluate(EXTRACT), fresh.evaluate(EXTRACT)
                difference = first_difference(shown, rendered) or json_difference(shown, feed)
                result = checks.check(difference is None, label, difference or "")
                result &= checks.check((difference := frame_difference(shown, feed)) is None, label + ": boxes at the feed's frames", difference or "")
                result &= checks.check((difference := overlap_difference(shown)) is None, label + ": no items overlap", difference or "")
                result &= checks.check((difference := width_difference(shown, feed, WIDTH)) is None, label + ": within the width", difference or "")
                return result

            feed = server.feed()
            verify("initial render", feed)
            # The first render shows the suggestions' title and "See all" footer, and each ad
            # slot's "Sponsored" footer, each inside its section's element.
            shown = {section["id"]: section for section in live.evaluate(EXTRACT)}
            suggestions = next((section for section in feed["sections"] if section["id"] == "suggestions"), None)
            users = len(suggestions["items"]) if suggestions else 0
            carousel = shown.get("suggestions") or {"header": None, "footer": None}
            checks.check(users > 0 and (carousel["header"] or {}).get("text") == "Suggested for you"
                         and (carousel["footer"] or {}).get("text") == f"See all ({users})",
                         "the suggestions show their title and a See all footer",
                         f"{users} users; header {carousel['header']}, footer {carousel['footer']}")
            ad_slots = [section for section in feed["sections"] if section["id"].startswith("ad-slot-")]
            ad_footers = {section["id"]: (shown.get(section["id"]) or {}).get("footer") for section in ad_slots}
            checks.check(ad_slots and all((ad_footers[section["id"]] or {}).get("text") == f"Sponsored · {section['items'][0]['data']['advertiser']}"
                                          for section in ad_slots),
                         "each ad slot shows its Sponsored footer", json.dumps(ad_footers))
            # The carousel scrolls to its end: its last user ends at the right inset.
            scrolled = live.evaluate("""() => {
              const section = document.querySelector('#feed [data-section-id="suggestions"]');
              const scroller = [...section.querySelectorAll('*')].find(node => getComputedStyle(node).overflowX === 'auto');
              const users = section.querySelectorAll('[data-item-id]');
              if (!scroller || users.length === 0) return null;
              scroller.scrollLeft = 1e6;
              const gap = section.getBoundingClientRect().right - users[users.length - 1].getBoundingClientRect().right;
              scroller.scrollLeft = 0;
              return gap;
            }""")
            inset = suggestions["layout"]["insets"]["right"] if suggestions else None
            checks.check(scrolled is not None and abs(scrolled - inset) <= 0.5, "the carousel scrolls to its last user",
                         f"the last user ends {scrolled} before the section's edge, the right inset is {inset}")
            screenshot_at = max(1, arguments.writes // 5)
            for number in range(1, arguments.writes + 1):
                # The screenshot pair shows a new video arriving at the top of the grid.
                kind, method, path, body = random_write(rng, feed, "video" if number == screenshot_at else None)
                kinds[kind] = kinds.get(kind, 0) + 1
                if number == screenshot_at:
                    live.screenshot(path=os.path.join(arguments.artifacts, "before.png"))
                status, answer = server.call(method, path, body)
                label = f"write {number} ({kind} {method} {path})"
                # A follow of a user already followed, or the like, may conflict; it changes nothing.
                checks.check(status < 500, label + " answered", f"{status} {answer}")
                after = server.feed()
                if after["snapshot"] == feed["snapshot"]:
                    feed = after
                    continue
                deltas_expected += 1
                verify(label, after)
                feed = after
                if number == screenshot_at:
                    live.wait_for_timeout(600)  # let the animation finish
                    live.screenshot(path=os.path.join(arguments.artifacts, "after.png"))
            stats = live.evaluate("window.deltafeedDemo.client.stats")
            reasons = live.evaluate("window.deltafeedDemo.client.refetchReasons")
            supplementary_steps = live.evaluate("window.deltafeedDemo.supplementarySteps")
            checks.check(stats["refetches"] == 0, "no refetch", f"{stats['refetches']} refetches: {reasons}")
            checks.check(stats["deltas"] == deltas_expected, "one delta per feed change",
                         f"{stats['deltas']} deltas applied, {deltas_expected} feed changes")
            used = routes_since(live_requests, 0)
            checks.check(stats["events"] == deltas_expected and stats["resets"] == 0 and stats["liveErrors"] == 0,
                         "one live event per feed change, no reset, no stream failure", json.dumps(stats))
            checks.check(used == {"live": 1, "delta": 0, "feed": 1}, "the live page fetched the feed once, opened one stream and never polled",
                         json.dumps(used))
            checks.check((difference := request_difference(live_requests)) is None, "the live page asks with kinds, width and viewport", difference or "")

            # deltafeed simulate drives the same page.
            simulate = subprocess.run(
                [arguments.binary, "simulate", "--url", server.base, "--admin-token", TOKEN, "--viewer", str(VIEWER),
                 "--count", "10", "--rate", "20", "--seed", str(arguments.seed)], capture_output=True, text=True, timeout=60)
            summary = simulate.stdout.strip().splitlines()[-1] if simulate.stdout.strip() else simulate.stderr.strip()
            checks.check(simulate.returncode == 0 and re.match(r"simulate: 10 writes in [0-9.]+ s", summary) is not None,
                         "deltafeed simulate", summary)
            verify("after deltafeed simulate", server.feed())
            stats = live.evaluate("window.deltafeedDemo.client.stats")
            checks.check(stats["refetches"] == 0 and stats["resets"] == 0, "no refetch after simulate",
                         str(live.evaluate("window.deltafeedDemo.client.refetchReasons")))

            # simulate waits out a 503's Retry-After and then writes.
            proxy, proxy_base = busy_proxy(server.base)
            started_busy = time.time()
            busy = subprocess.run(
                [arguments.binary, "simulate", "--url", proxy_base, "--admin-token", TOKEN, "--viewer", str(VIEWER),
                 "--count", "2", "--rate", "50", "--seed", str(arguments.seed)], capture_output=True, text=True, timeout=60)
            proxy.shutdown()
            summary = busy.stdout.strip().splitlines()[-1] if busy.stdout.strip() else busy.stderr.strip()
            checks.check(busy.returncode == 0 and summary.startswith("simulate: 2 writes") and "1 retried after 503" in summary
                         and time.time() - started_busy >= 1, "deltafeed simulate honours Retry-After", summary)
            verify("after deltafeed simulate through a busy proxy", server.feed())

            # The checks can fail: a page whose JSON Patch answers lose their last item operation
            # must notice the disagreement and refetch, and a 410 must make it refetch too.
            faulty = new_page()
            faults = {"patch": 0, "gone": 0}

            def corrupt_patch(route):
                response = route.fetch()
                body = response.json() if response.status == 200 else None
                if body and faults["patch"] == 0:
                    operations = [op for op in body["patch"] if "/items/" in op["path"]]
                    if operations:
                        body["patch"].remove(operations[-1])
                        faults["patch"] += 1
                        return route.fulfill(response=response, body=json.dumps(body))
                return route.fulfill(response=response)

            def gone_once(route):
                if faults["gone"] == 0 and faults["patch"] == 1:
                    faults["gone"] += 1
                    return route.fulfill(status=410, content_type="application/json",
                                         body='{"error":{"code":"snapshot_expired","message":"test"}}')
                return route.continue_()

            faulty.route(re.compile(r".*/feed/delta\?.*format=jsonpatch.*"), corrupt_patch)
            faulty.route(re.compile(r".*/feed/delta\?.*format=sequential.*"), gone_once)
            faulty.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&interval=100&live=0")
            wait_until(faulty, READY, timeout=15)
            for attempt in range(2):
                feed = server.feed()
                _, _, path, body = random_write(rng, feed, "like")
                server.call("PATCH", path, body)
                after = server.feed()
                try:
                    wait_until(faulty, "s => window.deltafeedDemo.client.document.snapshot === s", after["snapshot"])
                except TimeoutError:
                    pass
            reasons = faulty.evaluate("window.deltafeedDemo.client.refetchReasons")
            checks.check(len(reasons) == 2 and "disagree" in reasons[0] and reasons[1].startswith("410 snapshot_expired"),
                         "a corrupted JSON Patch and a 410 each make the page refetch", json.dumps(reasons))
            faulty.close()

            # The live route: a like through the admin API reaches the live page as a pushed event,
            # with no request from the page.
            likers = iter(range(2, 101))

            def like(feed, video_id=None):
                """PUT /v1/videos/{id}/likes/{user}: a user who has not liked it yet likes a video the feed shows."""
                video_id = video_id or rng.choice(sorted(shown_videos(feed)))
                status, answer = server.call("PUT", f"/v1/videos/{video_id}/likes/{next(likers)}")
                while status == 409:  # that user liked it already (deltafeed simulate likes too)
                    status, answer = server.call("PUT", f"/v1/videos/{video_id}/likes/{next(likers)}")
                checks.check(status in (200, 201), f"PUT like of video {video_id}", f"{status} {answer}")
                return video_id

            mark = len(live_requests)
            before = server.feed()
            events_before = live.evaluate("window.deltafeedDemo.client.stats.events")
            video_id = like(before)
            after = server.feed()
            checks.check(shown_videos(after)[video_id] == shown_videos(before)[video_id] + 1 and after["snapshot"] != before["snapshot"],
                         "the like changed the feed", f"like_count {shown_videos(before)[video_id]} → {shown_videos(after).get(video_id)}")
            verify("live: a like pushed to the page", after)
            held = live.evaluate("window.deltafeedDemo.client.document")
            checks.check(shown_videos(held)[video_id] == shown_videos(before)[video_id] + 1
                         and live.evaluate("window.deltafeedDemo.client.stats.events") == events_before + 1,
                         "live: the like arrived as one event", f"like_count on the page {shown_videos(held).get(video_id)}")
            checks.check(routes_since(live_requests, mark) == {"live": 0, "delta": 0, "feed": 0}, "live: no request from the page for the like",
                         json.dumps(routes_since(live_requests, mark)))

            # A burst of likes faster than the server's coalescing window: the page ends at the
            # last snapshot, equal to a fresh GET, having checked every event it got.
            mark = len(live_requests)
            events_before = live.evaluate("window.deltafeedDemo.client.stats.events")
            before = server.feed()
            for video_id in rng.sample(sorted(shown_videos(before)), 8):
                like(before, video_id)
            after = server.feed()
            verify("live: a burst of 8 likes", after)
            stats = live.evaluate("window.deltafeedDemo.client.stats")
            events = stats["events"] - events_before
            checks.check(1 <= events <= 8 and stats["refetches"] == 0 and stats["resets"] == 0 and stats["liveErrors"] == 0,
                         "live: the burst came in 1 to 8 events, no refetch, no reset", f"{events} events; {json.dumps(stats)}")
            checks.check(routes_since(live_requests, mark) == {"live": 0, "delta": 0, "feed": 0}, "live: no request from the page for the burst",
                         json.dumps(routes_since(live_requests, mark)))
            print(f"browser test: a burst of 8 likes reached the live page in {events} event(s)")

            # Polling, forced (live=0) and where the browser has no EventSource: the page says so,
            # never opens the live route, and follows a like by polling.
            for name, query, script in (("live=0", "&live=0", None),
                                        ("no EventSource", "", "delete window.EventSource;")):
                page = watch(new_page(), f"polling page ({name})")
                requests = track(page)
                if script:
                    page.add_init_script(script)
                page.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&interval=100{query}")
                wait_until(page, READY)
                mode = page.evaluate("window.deltafeedDemo.client.mode")
                checks.check(mode == "polling" and page.inner_text("#mode") == "polling", f"polling ({name}): the page says it polls",
                             f"mode {mode}, badge {page.inner_text('#mode')!r}")
                like(server.feed())
                verify(f"polling ({name}): a like", server.feed(), page)
                used = routes_since(requests, 0)
                checks.check(used["live"] == 0 and used["delta"] > 0 and used["feed"] == 1, f"polling ({name}): the delta route, not the live route",
                             json.dumps(used))
                checks.check((difference := request_difference(requests)) is None, f"polling ({name}): every request asks with kinds, width and viewport",
                             difference or "")
                page.close()

            # A live route that answers 503 (as an overloaded server, or a proxy that cannot pass
            # the stream): the page falls back to polling, follows a write, and tries the live
            # route again after live_retry ms, which then works and pushes the next write.
            refused = {"count": 0}

            def refuse_three(route):
                if refused["count"] < 3:
                    refused["count"] += 1
                    return route.fulfill(status=503, content_type="application/json", headers={"Retry-After": "1"},
                                         body='{"error":{"code":"overloaded","message":"test"}}')
                return route.continue_()

            page = watch(new_page(), "fallback page", failed_requests_expected=True)
            requests = track(page)
            page.route(re.compile(r".*/feed/live\?.*"), refuse_three)
            page.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&interval=100&live_retry=3000")
            wait_until(page, READY)
            try:
                wait_until(page, "() => window.deltafeedDemo.client.mode === 'polling'")
            except TimeoutError:
                pass
            stats = page.evaluate("window.deltafeedDemo.client.stats")
            checks.check(page.evaluate("window.deltafeedDemo.client.mode") == "polling" and refused["count"] == 3
                         and stats["fallbacks"] == 1 and page.inner_text("#mode") == "polling",
                         "fallback: three refused streams make the page poll", f"{refused['count']} refused; {json.dumps(stats)}")
            like(server.feed())
            verify("fallback: a like while polling", server.feed(), page)
            try:
                wait_until(page, "() => window.deltafeedDemo.client.mode === 'live'", timeout=15)
            except TimeoutError:
                pass
            checks.check(page.evaluate("window.deltafeedDemo.client.mode") == "live" and page.inner_text("#mode") == "live",
                         "fallback: the page returns to the live route", str(page.evaluate("window.deltafeedDemo.modes")))
            page.wait_for_timeout(300)  # a poll in flight when it switched completes
            mark = len(requests)
            like(server.feed())
            verify("fallback: a like pushed after the return", server.feed(), page)
            used = routes_since(requests, mark)
            checks.check(used == {"live": 0, "delta": 0, "feed": 0} and page.evaluate("window.deltafeedDemo.client.stats.refetches") == 0,
                         "fallback: after the return, no polling", json.dumps(used))
            page.close()

            # A live event that does not apply is noticed: a page that holds the feed from before
            # a new video gets, as its first event, the real delta with the new item's title
            # altered (its version kept). The page must refuse it (the item no longer hashes to
            # its version), fetch the feed again, say why, and go on live from there.
            stale = server.feed()
            _, method, path, body = random_write(rng, stale, "video")
            server.call(method, path, body)
            status, delta = server.call("GET", f"/v1/users/{VIEWER}/feed/delta?since={stale['snapshot']}&format=sequential&{feed_query()}")
            inserts = [op for op in delta["operations"] if op["op"] == "insert" and op["target"] == "items"] if status == 200 else []
            if checks.check(inserts and inserts[0]["items"][0]["kind"] == "video", "tampered event: the new video comes as an insert", json.dumps(delta)[:300]):
                inserts[0]["items"][0]["data"]["video"]["title"] = "Tampered on the way"
                tampered = f"retry: 2000\n\nevent: delta\nid: {delta['snapshot']}\ndata: {json.dumps(delta)}\n\n"
                served = {"feed": 0, "live": 0}

                def stale_feed(route):
                    served["feed"] += 1
                    if served["feed"] == 1:
                        return route.fulfill(status=200, content_type="application/json", body=json.dumps(stale))
                    return route.continue_()

                def tampered_live(route):
                    served["live"] += 1
                    if served["live"] == 1:
                        return route.fulfill(status=200, content_type="text/event-stream; charset=utf-8", body=tampered)
                    return route.continue_()

                page = new_page()
                page.route(re.compile(r".*/v1/users/[0-9]+/feed\?.*"), stale_feed)
                page.route(re.compile(r".*/feed/live\?.*"), tampered_live)
                page.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}")
                wait_until(page, READY)
                try:
                    wait_until(page, "() => window.deltafeedDemo.client.refetchReasons.length > 0 && window.deltafeedDemo.client.mode === 'live'")
                except TimeoutError:
                    pass
                reasons = page.evaluate("window.deltafeedDemo.client.refetchReasons")
                checks.check(len(reasons) == 1 and "hashes to version" in reasons[0] and served["live"] == 2,
                             "tampered event: the page refuses it, fetches the feed again and reopens the stream",
                             f"{json.dumps(reasons)}; {served}")
                like(server.feed())
                verify("tampered event: a like after the refetch", server.feed(), page)
                page.close()

            # The README's example, verbatim, on a page of this origin: it must follow a write.
            # (Inside a page with an icon: Chromium asks for /favicon.ico otherwise, and its 404 is a console error.)
            example = '<!doctype html><html><head><link rel="icon" href="data:,"></head><body>' + readme_example() + "</body></html>"
            messages = []
            page = watch(new_page(), "README example")
            page.on("console", lambda message: messages.append(message.text))
            page.route(f"{server.base}/readme-example.html",
                       lambda route: route.fulfill(status=200, content_type="text/html; charset=utf-8", body=example))
            page.goto(f"{server.base}/readme-example.html")
            before = server.feed(f"width={WIDTH}")  # what the example asks: width only, every kind, the default viewport
            wait_for_message(page, messages, f"feed {before['snapshot']}: {len(before['sections'])} sections")
            video = next(item["data"]["video"] for section in before["sections"] for item in section["items"] if item["kind"] == "video")
            server.call("PATCH", f"/v1/videos/{video['id']}", {"title": "Seen by the README example"})
            after = server.feed(f"width={WIDTH}")
            checks.check(wait_for_message(page, messages, f"now {after['snapshot']}, ") and any(m.startswith("change video:") for m in messages),
                         "README example follows a write", " | ".join(messages[-5:]))
            page.close()

            # The page at the narrowest and widest widths: two grid columns, nothing wider than the feed
            # (but the suggestions carousel, which scrolls sideways).
            for width in (320, 1200):
                page = watch(new_page(), f"page at {width}")
                page.goto(f"{server.base}/demo?viewer={VIEWER}&width={width}&poll=0")
                wait_until(page, READY)
                layout = page.evaluate("""() => {
                  const feed = document.getElementById('feed').getBoundingClientRect();
                  const cells = [...document.querySelectorAll('#feed .kind-video')].map(n => n.getBoundingClientRect());
                  const overflow = [...document.querySelectorAll('#feed [data-item-id]:not(.kind-user)')].filter(n => {
                    const r = n.getBoundingClientRect(); return r.right > feed.right + 0.5 || r.left < feed.left - 0.5; }).length;
                  return {feed: feed.width, twoColumns: cells.length >= 2 && Math.abs(cells[0].top - cells[1].top) < 1 && cells[1].left > cells[0].right, overflow};
                }""")
                checks.check(abs(layout["feed"] - width) < 1 and layout["twoColumns"] and layout["overflow"] == 0,
                             f"layout at {width} pt", json.dumps(layout))
                # And at that width too, every box is the server's frame.
                at_width = server.feed(feed_query(width))
                shown = page.evaluate(EXTRACT)
                difference = (json_difference(shown, at_width) or frame_difference(shown, at_width) or overlap_difference(shown)
                              or width_difference(shown, at_width, width))
                checks.check(page.evaluate("window.deltafeedDemo.client.document.snapshot") == at_width["snapshot"] and difference is None,
                             f"layout at {width} pt: boxes at the feed's frames", difference or "the page holds another snapshot")
                page.close()

            # A page that renders video only (kinds=video in its URL, passed on to the server):
            # it asks for video alone and shows only video items, no header or footer (the full
            # feed has both, and header, ad and user items), and follows a write that way.
            video_only = feed_query(kinds="video")
            page = watch(new_page(), "kinds=video page")
            requests = track(page)
            page.goto(f"{server.base}/demo?viewer={VIEWER}&width={WIDTH}&kinds=video&interval=100")
            wait_until(page, READY)
            full, feed = server.feed(), server.feed(video_only)
            kinds_in = lambda document: sorted({item["kind"] for section in document["sections"] for item in section["items"]}
                                               | {section[slot]["kind"] for section in document["sections"] for slot in ("header", "footer") if slot in section})
            checks.check(kinds_in(feed) == ["video"] and len(kinds_in(full)) > 1, "kinds=video: the server sends video only",
                         f"kinds=video: {kinds_in(feed)}; every kind: {kinds_in(full)}")
            verify("kinds=video: initial render", feed, page, "&kinds=video")
            shown = page.evaluate(EXTRACT)
            items = [item for section in shown for item in section["items"]]
            checks.check(items and all(item["kind"].split() == ["item", "kind-video"] for item in items)
                         and not any(section["header"] or section["footer"] for section in shown)
                         and page.evaluate("document.querySelectorAll('#feed [data-supplementary]').length") == 0,
                         "kinds=video: the page shows video items only, no header or footer",
                         f"{sorted({item['kind'] for item in items})}; supplementary {[(s['id'], s['header'], s['footer']) for s in shown if s['header'] or s['footer']]}")
            like(server.feed(video_only))
            verify("kinds=video: a like", server.feed(video_only), page, "&kinds=video")
            checks.check((difference := request_difference(requests, kinds="video")) is None, "kinds=video: every request asks with kinds=video",
                         difference or "")
            checks.check(page.evaluate("window.deltafeedDemo.client.stats.refetches") == 0, "kinds=video: no refetch",
                         str(page.evaluate("window.deltafeedDemo.client.refetchReasons")))
            page.close()

            # A carousel that grows and shrinks: a new viewer who follows all but three users is
            # suggested those three; each unfollow or follow then changes the carousel's item
            # count, so the delta replaces its layout (section_layouts) and patches its "See all"
            # footer, until the last follow empties it (the section goes) and an unfollow brings
            # it back (inserted whole). The page must follow each change live, without a refetch.
            status, created = server.call("POST", "/v1/users", {"handle": f"carousel_{arguments.seed}", "display_name": "Carousel Test"})
            checks.check(status == 201, "carousel: a new viewer", f"{status} {created}")
            carousel_viewer = created["user"]["id"] if status == 201 else None
            others = [user for user in range(1, 101) if user != carousel_viewer]
            for user in others[3:]:
                server.call("PUT", f"/v1/users/{carousel_viewer}/follows/{user}")
            page = watch(new_page(), "carousel page")
            page.goto(f"{server.base}/demo?viewer={carousel_viewer}&width={WIDTH}&interval=100")
            wait_until(page, READY)
            feed = server.feed(viewer=carousel_viewer)
            carousel_users = lambda document: next((len(section["items"]) for section in document["sections"] if section["id"] == "suggestions"), 0)
            checks.check(carousel_users(feed) == 3, "carousel: three users suggested", f"{carousel_users(feed)} users")
            verify("carousel: initial render", feed, page, viewer=carousel_viewer)
            for method, user in (("DELETE", others[3]), ("PUT", others[0]), ("PUT", others[1]), ("PUT", others[2]), ("PUT", others[3]), ("DELETE", others[1])):
                status, answer = server.call(method, f"/v1/users/{carousel_viewer}/follows/{user}")
                feed = server.feed(viewer=carousel_viewer)
                label = f"carousel: {'unfollow' if method == 'DELETE' else 'follow'} {user} ({carousel_users(feed)} users suggested)"
                checks.check(status < 300, label + " answered", f"{status} {answer}")
                verify(label, feed, page, viewer=carousel_viewer)
            counts = page.evaluate("[window.deltafeedDemo.sectionLayouts, window.deltafeedDemo.supplementarySteps]")
            checks.check(counts[0] > 0 and counts[1] > 0 and page.evaluate("window.deltafeedDemo.client.stats.refetches") == 0,
                         "carousel: the page applied new layouts and footer steps without a refetch",
                         f"{counts[0]} layouts, {counts[1]} header/footer steps; refetches {page.evaluate('window.deltafeedDemo.client.refetchReasons')}")
            page.close()
            # The server shuts down (every stream gets `event: shutdown`) and starts again on the
            # same port: the live page reconnects by itself (EventSource, Last-Event-ID) and the
            # next write reaches it as a pushed event, without polling or fetching the feed.
            mark = len(live_requests)
            before = live.evaluate("window.deltafeedDemo.client.stats")
            server.terminate()
            try:
                wait_until(live, "n => window.deltafeedDemo.client.stats.shutdowns > n", before["shutdowns"], timeout=5)
            except TimeoutError:
                pass
            server.start()
            try:
                wait_until(live, "() => window.deltafeedDemo.client.mode === 'live'", timeout=15)
            except TimeoutError:
                pass
            feed = server.feed()
            like(feed)
            verify("restart: a like after the server came back", server.feed())
            stats = live.evaluate("window.deltafeedDemo.client.stats")
            used = routes_since(live_requests, mark)
            checks.check(stats["shutdowns"] == before["shutdowns"] + 1 and stats["fallbacks"] == 0 and stats["refetches"] == 0
                         and live.evaluate("window.deltafeedDemo.client.mode") == "live",
                         "restart: the page got the shutdown event and reconnected to the live route", json.dumps(stats))
            checks.check(used["live"] >= 1 and used["delta"] == 0 and used["feed"] == 0, "restart: reconnected without polling or fetching the feed",
                         json.dumps(used))
            print(f"browser test: after the restart the stream resumed with {stats['resets'] - before['resets']} reset(s), "
                  f"{stats['liveErrors'] - before['liveErrors']} failed reconnect(s), {used['live']} stream request(s)")

            checks.check(not console_errors, "no console errors", "; ".join(console_errors[:5]))
            browser.close()
    finally:
        server.stop()
    elapsed = time.time() - started
    print(f"browser test: {deltas_expected} deltas checked against fresh renders ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}), "
          f"{supplementary_steps} header/footer steps among them, in {elapsed:.1f} s")
    print(f"browser test: screenshots of one delta: {arguments.artifacts}/before.png, {arguments.artifacts}/after.png")
    print(f"browser: {checks.passed} passed, {checks.failed} failed")
    return 0 if checks.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
