#!/usr/bin/env python3
"""Drives a server that runs under callgrind through polls whose answers are known in advance, so
scripts/bench-instructions can count what one changed poll and one unchanged poll cost.

  poll_instructions.py --binary WRAPPER --seed DB --out DIR --port P --viewers N --rounds R

The server (WRAPPER runs it under callgrind, collecting inside each request's handler and the
maintenance thread's loop) serves a copy of the seeded demo store. Each of N viewers fetches its
first page; the video most of those pages show is found. Counters are zeroed, then R rounds:
a like of that video, then every viewer's delta poll since the snapshot it holds (a changed
poll for the viewers whose page shows it, the client one like behind, as in the polling mix's
bursts), each viewer moving on to the snapshot it was given. Counters are dumped ("changed").
Then R rounds of a new video by the author most of the pages show, each followed by every
viewer's poll (its followers' grids shifted by one: "shifted"). Then every viewer polls again R
times with the snapshot it holds (304s: "unchanged"). Prints one JSON line: the polls of each
kind and status.
"""

import argparse
import collections
import gzip
import http.client
import json
import os
import shutil
import signal
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from live import TOKEN, wait_until_healthy  # noqa: E402


def request(connection, method, path, body=None):
    headers = {"Authorization": f"Bearer {TOKEN}", "Accept-Encoding": "gzip"}
    if body is not None:
        headers["Content-Type"] = "application/json"
    connection.request(method, path, body=body, headers=headers)
    response = connection.getresponse()
    body = response.read()
    if response.headers.get("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return response.status, response.headers, body


def etag(headers):
    return headers["ETag"].strip('"').removeprefix("W/").strip('"')


def callgrind_control(pid, *arguments):
    subprocess.run(["callgrind_control", *arguments, str(pid)], check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", required=True)
    parser.add_argument("--seed", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--viewers", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--users", type=int, default=2000)
    options = parser.parse_args()

    db = os.path.join(options.out, "poll-store.sqlite")
    # A fresh copy for each binary, without the write-ahead log and shared memory the previous
    # binary's server left beside it: SQLite would read that log into the new copy and find the
    # database malformed.
    for stale in (db + "-wal", db + "-shm"):
        if os.path.exists(stale):
            os.remove(stale)
    shutil.copyfile(options.seed, db)
    log = open(os.path.join(options.out, "poll-server.log"), "w")
    server = subprocess.Popen(
        [options.binary, "serve", "--db", db, "--host", "127.0.0.1", "--port", str(options.port), "--threads", "1",
         "--admin-token", TOKEN, "--log-level", "warning"], stdout=log, stderr=subprocess.STDOUT)
    try:
        def alive():
            if server.poll() is not None:
                raise SystemExit(f"the server exited with {server.returncode}; see {log.name}")

        wait_until_healthy(options.port, 300, alive, log.name, pause=0.5)  # valgrind starts slowly
        connection = http.client.HTTPConnection("127.0.0.1", options.port, timeout=60)

        viewers = range(1, options.viewers + 1)
        held = {}
        shows = collections.Counter()
        authors = collections.Counter()
        for viewer in viewers:
            status, headers, body = request(connection, "GET", f"/v1/users/{viewer}/feed")
            if status != 200:
                raise SystemExit(f"GET feed of viewer {viewer} answered {status}")
            held[viewer] = etag(headers)
            page = json.loads(body)
            videos = [item for section in page["sections"] for item in section["items"] if item["kind"] == "video"]
            shows.update({item["id"] for item in videos})
            authors.update({item["data"]["author"]["id"] for item in videos})
        video_id, showing = min(shows.items(), key=lambda item: (-item[1], item[0]))
        video = int(video_id.split(":")[1])
        author, author_shown = min(authors.items(), key=lambda item: (-item[1], item[0]))

        def poll(viewer):
            status, headers, _ = request(connection, "GET", f"/v1/users/{viewer}/feed/delta?since={held[viewer]}")
            if status == 200:
                held[viewer] = etag(headers)
            elif status != 304:
                raise SystemExit(f"a delta poll of viewer {viewer} answered {status}")
            return status

        # Every viewer holds a snapshot of the page as it is now before counting starts.
        for viewer in viewers:
            poll(viewer)
        callgrind_control(server.pid, "--zero")
        statuses = collections.Counter()
        liker = options.users
        for _ in range(options.rounds):
            while True:
                status, _, body = request(connection, "PUT", f"/v1/videos/{video}/likes/{liker}")
                liker -= 1
                if status == 201:
                    break
                if status != 409 or liker < 1:
                    raise SystemExit(f"PUT like answered {status}: {body[:200]}")
            time.sleep(0.5)  # the index applies the like
            for viewer in viewers:
                statuses[f"changed round {poll(viewer)}"] += 1
        time.sleep(2)  # the maintenance pass stores what the changed polls handed out
        callgrind_control(server.pid, "--dump=changed")
        # New videos of the author whose videos most pages show: a video at the top of its
        # followers' grids, every other video one place on (the polling mix's other changed polls).
        for round in range(options.rounds):
            body = json.dumps({"author_id": author, "title": f"Counted video {round}", "thumbnail_url": "https://img.example/c.jpg",
                               "duration_seconds": 30})
            status, _, answer = request(connection, "POST", "/v1/videos", body)
            if status != 201:
                raise SystemExit(f"POST video answered {status}: {answer[:200]}")
            time.sleep(0.5)
            for viewer in viewers:
                statuses[f"shifted round {poll(viewer)}"] += 1
        time.sleep(2)
        callgrind_control(server.pid, "--dump=shifted")
        for _ in range(options.rounds):
            for viewer in viewers:
                statuses[f"unchanged round {poll(viewer)}"] += 1
        time.sleep(2)
        callgrind_control(server.pid, "--dump=unchanged")
        print(json.dumps({"video": video, "showing": showing, "author": author, "author_shown": author_shown,
                          "viewers": options.viewers, "rounds": options.rounds, "statuses": statuses}))
    finally:
        if server.poll() is None:
            server.send_signal(signal.SIGTERM)
            try:
                server.wait(timeout=120)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait()
        log.close()


if __name__ == "__main__":
    sys.exit(main())
