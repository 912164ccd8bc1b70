-- wrk script for scripts/bench-writes: each request is one write of KIND, on random rows of the
-- seeded demo (USERS users, VIDEOS videos):
--   likes    PUT /v1/videos/{v}/likes/{u}        (201; 409 when u already likes v)
--   videos   POST /v1/videos                     (201)
--   follows  PUT /v1/users/{a}/follows/{b}       (201; 409 when a follows b, 422 when a = b)
--   mix      7 likes, 1 new video, 2 follows in 10
-- Acknowledged writes are the 2xx answers; 409/422 are answered refusals (the write's rule held),
-- counted apart; anything else (503, 5xx) is an error.
local kind = os.getenv("KIND") or "likes"
local users = tonumber(os.getenv("USERS") or "2000")
local videos = tonumber(os.getenv("VIDEOS") or "50000")
local token = os.getenv("TOKEN") or "bench-token"
local threads = {}

function setup(thread)
  thread:set("id", #threads)
  table.insert(threads, thread)
end

function init(args)
  math.randomseed(os.time() * 1000 + id * 7919)
  acknowledged, refused, failed, n = 0, 0, 0, 0
end

local headers = { ["Authorization"] = "Bearer " .. token, ["Content-Type"] = "application/json" }

local function like()
  return wrk.format("PUT", "/v1/videos/" .. math.random(videos) .. "/likes/" .. math.random(users), headers)
end

local function video()
  n = n + 1
  local body = string.format(
    '{"author_id":%d,"title":"bench %d-%d","thumbnail_url":"https://cdn.deltafeed.example/thumbs/b.jpg","duration_seconds":%d}',
    math.random(users), id, n, math.random(5, 120))
  return wrk.format("POST", "/v1/videos", headers, body)
end

local function follow()
  return wrk.format("PUT", "/v1/users/" .. math.random(users) .. "/follows/" .. math.random(users), headers)
end

function request()
  if kind == "likes" then return like() end
  if kind == "videos" then return video() end
  if kind == "follows" then return follow() end
  local r = math.random(10)
  if r <= 7 then return like() elseif r == 8 then return video() else return follow() end
end

function response(status, headers, body)
  if status >= 200 and status < 300 then
    acknowledged = acknowledged + 1
  elseif status == 409 or status == 422 then
    refused = refused + 1
  else
    failed = failed + 1
  end
end

function done(summary, latency, requests)
  local t = { acknowledged = 0, refused = 0, failed = 0 }
  for _, thread in ipairs(threads) do
    for key, _ in pairs(t) do t[key] = t[key] + (thread:get(key) or 0) end
  end
  local seconds = summary.duration / 1e6
  io.write(string.format(
    "WRITES requests=%d seconds=%.3f acknowledged=%d refused=%d failed=%d ack_per_s=%.1f p50_ms=%.2f p99_ms=%.2f errors=%d\n",
    summary.requests, seconds, t.acknowledged, t.refused, t.failed, t.acknowledged / seconds,
    latency:percentile(50) / 1000, latency:percentile(99) / 1000,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout))
end
