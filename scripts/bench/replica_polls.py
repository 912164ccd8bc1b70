#!/usr/bin/env python3
"""Viewers polling their deltas through a balancer while likes land on their pages.

Each viewer (a thread with its own keep-alive connection) fetches its feed once, then asks for
the delta since the snapshot of its last answer, every INTERVAL seconds (0: back to back), each
viewer at its own phase of the interval as independent phones are (--lockstep: all at the same
instants, a burst of every viewer each interval). A
writer likes videos those pages show at RATE writes/s through the same URL. Through a
round-robin balancer over replicas, a viewer's next poll lands on another replica than its last
answer came from: a 410 there means that replica did not know a snapshot another one handed out.

Prints one RESULT line: polls, changed (200), unchanged (304), gone (410, each followed by a
fresh feed), errors (5xx or no answer), writes acknowledged, and the latency of changed polls
(p50/p99 ms, the answers that hand out a new snapshot). Exit status 0; the caller judges.

  replica_polls.py --url http://127.0.0.1:8080 --viewers 40 --interval 0.3 --duration 10 \
      --rate 15 --admin-token T
"""
import argparse
import http.client
import json
import random
import threading
import time
import urllib.parse


def connect(base):
    parts = urllib.parse.urlsplit(base)
    return http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=30)


class Counts:
    def __init__(self):
        self.lock = threading.Lock()
        self.polls = self.changed = self.unchanged = self.gone = self.errors = self.writes = 0
        self.changed_ms = []

    def add(self, **values):
        with self.lock:
            for key, value in values.items():
                if key == "changed_ms":
                    self.changed_ms.append(value)
                else:
                    setattr(self, key, getattr(self, key) + value)


def request(connection_box, base, method, path, body=None, headers=None):
    """(status, body bytes, headers) of one request on a kept-alive connection, reconnecting once."""
    for attempt in (0, 1):
        try:
            if connection_box[0] is None:
                connection_box[0] = connect(base)
            connection_box[0].request(method, path, body=body, headers=headers or {})
            response = connection_box[0].getresponse()
            data = response.read()
            return response.status, data, response
        except (http.client.HTTPException, OSError):
            connection_box[0].close()
            connection_box[0] = None
            if attempt == 1:
                return 0, b"", None
    return 0, b"", None


def viewer_loop(base, viewer, interval, clock, counts, videos, ready, lockstep):
    """Fetches the feed, says it is ready, then polls until clock["deadline"] (set once every
    viewer is ready). With an interval, a viewer's first poll comes at a random point of its
    first interval (independent phones are not in step), unless `lockstep`: then every viewer
    polls at the same instants, a burst of all of them each interval."""
    box = [None]
    status, data, _ = request(box, base, "GET", f"/v1/users/{viewer}/feed")
    if status != 200:
        counts.add(errors=1)
        ready.release()
        return
    page = json.loads(data)
    for section in page["sections"]:
        for item in section["items"]:
            if item["kind"] == "video":
                videos.append(item["data"]["video"]["id"])
    snapshot = page["snapshot"]
    ready.release()
    clock["go"].wait()
    if interval > 0 and not lockstep:
        time.sleep(random.Random(viewer).uniform(0, interval))
    while time.monotonic() < clock["deadline"]:
        started = time.monotonic()
        status, data, _ = request(box, base, "GET", f"/v1/users/{viewer}/feed/delta?since={snapshot}")
        elapsed_ms = (time.monotonic() - started) * 1000
        if status == 200:
            snapshot = json.loads(data)["snapshot"]
            counts.add(polls=1, changed=1, changed_ms=elapsed_ms)
        elif status == 304:
            counts.add(polls=1, unchanged=1)
        elif status == 410:
            counts.add(polls=1, gone=1)
            status, data, _ = request(box, base, "GET", f"/v1/users/{viewer}/feed")
            if status == 200:
                snapshot = json.loads(data)["snapshot"]
        else:
            counts.add(polls=1, errors=1)
        if interval > 0:
            time.sleep(max(0.0, interval - (time.monotonic() - started)))


def writer_loop(base, token, rate, deadline, counts, videos):
    box = [None]
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    next_at = time.monotonic()
    random.seed(7)
    while time.monotonic() < deadline:
        if videos:
            video = random.choice(videos)
            body = json.dumps({"like_count": random.randrange(1, 1_000_000)})
            status, _, _ = request(box, base, "PATCH", f"/v1/videos/{video}", body=body, headers=headers)
            if 200 <= status < 300:
                counts.add(writes=1)
        next_at += 1.0 / rate
        time.sleep(max(0.0, next_at - time.monotonic()))


def percentile(values, fraction):
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--viewers", type=int, default=40)
    parser.add_argument("--first-viewer", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--rate", type=float, default=15.0)
    parser.add_argument("--admin-token", required=True)
    parser.add_argument("--lockstep", action="store_true", help="every viewer polls at the same instants (a burst each interval)")
    arguments = parser.parse_args()
    counts = Counts()
    videos = []
    ready = threading.Semaphore(0)
    clock = {"go": threading.Event(), "deadline": 0.0}
    threads = [
        threading.Thread(
            target=viewer_loop, args=(arguments.url, arguments.first_viewer + index, arguments.interval, clock, counts, videos, ready, arguments.lockstep),
            daemon=True)
        for index in range(arguments.viewers)
    ]
    for thread in threads:
        thread.start()
    # Every viewer holds its page before the clock starts.
    for _ in threads:
        ready.acquire()
    clock["deadline"] = time.monotonic() + arguments.duration
    clock["go"].set()
    writer = threading.Thread(
        target=writer_loop, args=(arguments.url, arguments.admin_token, arguments.rate, clock["deadline"], counts, videos), daemon=True)
    writer.start()
    for thread in threads:
        thread.join(arguments.duration + 30)
    writer.join(5)
    print(
        f"RESULT polls={counts.polls} changed={counts.changed} unchanged={counts.unchanged} gone={counts.gone} "
        f"errors={counts.errors} writes={counts.writes} changed_p50_ms={percentile(counts.changed_ms, 0.50):.2f} "
        f"changed_p99_ms={percentile(counts.changed_ms, 0.99):.2f}")


if __name__ == "__main__":
    main()
