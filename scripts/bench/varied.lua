-- wrk script for scripts/bench-mix's "varied feeds" phase: unauthenticated feed requests from
-- random viewers (1..VIEWERS) with random widths (320..1200) and limits (1..200), each a feed
-- the server has not composed before: what such traffic costs in memory and on disk.
local viewers = tonumber(os.getenv("VIEWERS") or "2000")

function init(args)
  math.randomseed(os.time() + (id or 0))
end

function request()
  local path = string.format("/v1/users/%d/feed?limit=%d&width=%d", math.random(1, viewers), math.random(1, 200), math.random(320, 1200))
  return wrk.format("GET", path, { ["Accept-Encoding"] = "gzip" })
end
