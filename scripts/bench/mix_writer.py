"""Open-loop writer for scripts/bench-mix: offers RATE writes per second for SECONDS seconds.

Mix: 60 % like-count edits of videos that are in viewers' feeds (a few more likes each time, as
likes arrive; the feeds are read again every RESAMPLE_SECONDS, default 20, 0 for never, so that
in a long run the likes keep landing on what the feeds show as new videos push older ones off
them), 20 % new videos by random authors, 20 % follow/unfollow (unfollowing pairs it followed).
Writes are scheduled at fixed
times whatever the answers, over several keep-alive connections, so a slow answer does not
lower the offered rate. Prints one line: offered, acknowledged (2xx), refused (409), errors by
status, acknowledged per second and the latency p50/p99 of acknowledged writes.
With MODE "elsewhere" (the sixth argument; default "mix") every write is instead a new title for
a video that none of the sampled feeds shows: writes no poll's page depends on, to show that what a
poll costs does not grow with them.
Usage: mix_writer.py PORT TOKEN RATE SECONDS USERS [MODE]
"""
import http.client
import json
import os
import queue
import random
import sys
import threading
import time

port, token, rate, seconds, users = int(sys.argv[1]), sys.argv[2], float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5])
mode = sys.argv[6] if len(sys.argv) > 6 else "mix"
if mode not in ("mix", "elsewhere"):
    print(f"WRITER error=unknown mode {mode}")
    sys.exit(1)
headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
rng = random.Random(7)


def feed_videos():
    """Like counts of the videos that are in viewers' feeds (the first pages of 40 viewers)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    likes = {}
    for viewer in range(1, 41):
        connection.request("GET", f"/v1/users/{viewer}/feed?limit=20")
        response = connection.getresponse()
        body = response.read()
        if response.status != 200:
            continue
        for section in json.loads(body)["sections"]:
            for item in section["items"]:
                if item["kind"] == "video":
                    video = item["data"]["video"]
                    likes[video["id"]] = video["like_count"]
    connection.close()
    return likes


like_counts = feed_videos()
videos = sorted(like_counts)
if not videos:
    print("WRITER error=no videos in feeds")
    sys.exit(1)
resample_seconds = float(os.environ.get("RESAMPLE_SECONDS", "20"))
followed = []  # pairs this writer followed, to unfollow later
lock = threading.Lock()
results = {"acked": 0, "refused": 0, "errors": {}, "latencies": []}


def unseen_video():
    """A video none of the sampled feeds shows."""
    while True:
        video = rng.randrange(1, 40_000)
        if video not in like_counts:
            return video


def next_write(n):
    if mode == "elsewhere":
        return "PATCH", f"/v1/videos/{unseen_video()}", json.dumps({"title": f"Retitled {n}"})
    kind = rng.random()
    if kind < 0.6:
        with lock:
            video = rng.choice(videos)
            like_counts[video] += rng.randrange(1, 6)
            count = like_counts[video]
        return "PATCH", f"/v1/videos/{video}", json.dumps({"like_count": count})
    if kind < 0.8:
        return "POST", "/v1/videos", json.dumps({
            "author_id": rng.randrange(1, users + 1), "title": f"Bench video {n}",
            "thumbnail_url": "https://img.example/bench.jpg", "duration_seconds": 30})
    with lock:
        if followed and rng.random() < 0.5:
            a, b = followed.pop(rng.randrange(len(followed)))
            return "DELETE", f"/v1/users/{a}/follows/{b}", None
    a, b = rng.randrange(1, users + 1), rng.randrange(1, users + 1)
    while b == a:
        b = rng.randrange(1, users + 1)
    return "PUT", f"/v1/users/{a}/follows/{b}", None


def resample():
    """The videos the feeds show now; like counts this writer set are kept (it is the only one
    that sets them)."""
    global videos
    try:
        fresh = feed_videos()
    except Exception:  # a busy server: keep the last sample
        return
    with lock:
        for video, count in fresh.items():
            like_counts.setdefault(video, count)
        if fresh:
            videos = sorted(fresh)


jobs = queue.Queue()


def worker():
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    while True:
        job = jobs.get()
        if job is None:
            return
        method, path, body = job
        start = time.perf_counter()
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            response.read()
            status = response.status
        except Exception as error:  # a dropped connection counts as an error; reconnect
            status = type(error).__name__
            connection.close()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        elapsed = time.perf_counter() - start
        with lock:
            if isinstance(status, int) and 200 <= status < 300:
                results["acked"] += 1
                results["latencies"].append(elapsed)
                if method == "PUT":
                    followed.append(tuple(int(x) for x in path.split("/")[3:6:2]))
            elif status == 409:
                results["refused"] += 1
            else:
                results["errors"][str(status)] = results["errors"].get(str(status), 0) + 1


offered = 0
started = time.perf_counter()
if rate > 0:
    workers = [threading.Thread(target=worker, daemon=True) for _ in range(16)]
    for thread in workers:
        thread.start()
    total = int(rate * seconds)
    next_sample = started + resample_seconds
    for n in range(total):
        if mode == "mix" and resample_seconds > 0 and time.perf_counter() >= next_sample:
            threading.Thread(target=resample, daemon=True).start()
            next_sample += resample_seconds
        due = started + n / rate
        delay = due - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        jobs.put(next_write(n))
        offered += 1
    for _ in workers:
        jobs.put(None)
    for thread in workers:
        thread.join(timeout=60)
elapsed = time.perf_counter() - started
latencies = sorted(results["latencies"])


def percentile(p):
    return latencies[min(len(latencies) - 1, int(len(latencies) * p))] * 1000 if latencies else 0.0


errors = ",".join(f"{k}:{v}" for k, v in sorted(results["errors"].items())) or "none"
print(f"WRITER offered={offered} acked={results['acked']} refused={results['refused']} errors={errors} "
      f"offered_per_s={offered / max(seconds, 1e-9):.1f} acked_per_s={results['acked'] / max(elapsed, 1e-9):.1f} "
      f"p50_ms={percentile(0.5):.2f} p99_ms={percentile(0.99):.2f}")
