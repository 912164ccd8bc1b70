-- wrk script for scripts/bench-mix: VIEWERS viewers (ids 1..VIEWERS) each keep their own last
-- snapshot id. A viewer with none fetches its feed; otherwise it asks for the delta since its
-- snapshot. 200 moves the viewer to the snapshot in the body, 304 keeps it, 410 makes it fetch
-- the feed again. wrk does not say which request a response answers, so each request carries
-- X-Request-Id "v<viewer>-<n>", which the server echoes. Requests say Accept-Encoding as phones
-- do (ACCEPT_ENCODING, default gzip; "identity" for raw bodies); the new snapshot id is read from
-- the ETag, which is the same in either coding.
local viewers = tonumber(os.getenv("VIEWERS") or "2000")
local accept_encoding = os.getenv("ACCEPT_ENCODING") or "gzip"
-- WAIT=N makes each delta request a long poll (`&wait=N`): held until the viewer's feed changes.
local wait_suffix = (os.getenv("WAIT") and os.getenv("WAIT") ~= "0") and ("&wait=" .. os.getenv("WAIT")) or ""
local threads = {}
-- THINK_MS=N makes each connection wait N ms after an answer before its next request, as a phone
-- polling at an interval does (0, the default: back to back, the server saturated).
local think_ms = tonumber(os.getenv("THINK_MS") or "0")
if think_ms > 0 then
  function delay() return think_ms end
end

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  snapshots = {}
  -- Viewers keep their snapshots from one run to the next, as phones do (SNAPSHOTS: a file of
  -- "viewer snapshot" lines, read here and written by done()).
  local file = os.getenv("SNAPSHOTS") and io.open(os.getenv("SNAPSHOTS"), "r")
  if file then
    for line in file:lines() do
      local v, snap = string.match(line, "^(%d+) (%x+)$")
      if v then snapshots[tonumber(v)] = snap end
    end
    file:close()
  end
  counter = 0
  ok, notmodified, gone, other, feeds = 0, 0, 0, 0, 0
  -- Each wrk thread owns a disjoint slice of the viewers, so no viewer has two requests out.
  nthreads = tonumber(os.getenv("WRK_THREADS") or "1")
  first = id + 1
end

function request()
  -- Round robin over this thread's viewers: first, first + nthreads, ...
  local slice = math.floor((viewers - first) / nthreads) + 1
  local v = first + (counter % slice) * nthreads
  counter = counter + 1
  local since = snapshots[v]
  local path
  if since then
    path = "/v1/users/" .. v .. "/feed/delta?since=" .. since .. wait_suffix
  else
    path = "/v1/users/" .. v .. "/feed"
    feeds = feeds + 1
  end
  return wrk.format("GET", path, { ["X-Request-Id"] = "v" .. v .. "-" .. counter, ["Accept-Encoding"] = accept_encoding })
end

function response(status, headers, body)
  local rid = headers["X-Request-Id"] or headers["x-request-id"] or ""
  local v = tonumber(string.match(rid, "^v(%d+)%-"))
  if status == 200 then
    ok = ok + 1
    local snap = string.match(headers["ETag"] or headers["etag"] or "", '(%x+)')
    if v and snap then snapshots[v] = snap end
  elseif status == 304 then
    notmodified = notmodified + 1
  elseif status == 410 then
    gone = gone + 1
    if v then snapshots[v] = nil end
  else
    other = other + 1
  end
end

function done(summary, latency, requests)
  local t = { ok = 0, notmodified = 0, gone = 0, other = 0, feeds = 0 }
  local kept = {}
  for _, thread in ipairs(threads) do
    for key, _ in pairs(t) do t[key] = t[key] + (thread:get(key) or 0) end
    for v, snap in pairs(thread:get("snapshots") or {}) do kept[v] = snap end
  end
  if os.getenv("SNAPSHOTS") then
    local file = io.open(os.getenv("SNAPSHOTS"), "w")
    for v, snap in pairs(kept) do file:write(v, " ", snap, "\n") end
    file:close()
  end
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "MIX requests=%d seconds=%.3f rps=%.1f p50_ms=%.3f p90_ms=%.3f p99_ms=%.3f p999_ms=%.3f max_ms=%.3f s200=%d s304=%d s410=%d other=%d feeds=%d errors=%d\n",
    summary.requests, seconds, summary.requests / seconds,
    latency:percentile(50) / 1000, latency:percentile(90) / 1000, latency:percentile(99) / 1000,
    latency:percentile(99.9) / 1000, latency.max / 1000,
    t.ok, t.notmodified, t.gone, t.other, t.feeds,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
