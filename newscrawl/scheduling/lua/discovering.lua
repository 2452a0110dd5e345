-- How many start, list, sitemap and feed pages (the run's discovery) are queued or in flight.
-- KEYS: queue, inflight
-- A queued request's score is -priority * 2^32 + sequence: discovery pages have a priority
-- above 0 (articles 0, a retried article below), so a negative score. An in-flight entry is
-- read for its kind ("k").
local DISCOVERY_KINDS = 'start list sitemap feed'
local n = redis.call('ZCOUNT', KEYS[1], '-inf', '(0')
for _, payload in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
  local ok, obj = pcall(cjson.decode, payload)
  if ok and type(obj) == 'table' and type(obj['k']) == 'string' and obj['k'] ~= ''
     and string.find(' ' .. DISCOVERY_KINDS .. ' ', ' ' .. obj['k'] .. ' ', 1, true) then
    n = n + 1
  end
end
return n
