-- Grant the next request its turn (politeness for the whole cluster, docs/design/scheduling.md).
-- KEYS: queue, inflight, owners hash ('' for none)
-- ARGV: lease ms, worker id, window (queue entries looked at; 0: the first, no host limits),
--       randomize the delay ('1': x uniform(0.5, 1.5), as Scrapy's RANDOMIZE_DOWNLOAD_DELAY),
--       AutoThrottle's start delay in ms ('' when AutoThrottle is not shared: no throttle keys),
--       payload... (entries of this worker whose download ended: their host slots are freed
--       first, if they are still in flight and held by this worker)
-- An entry with a host slot ("s": the host's sorted set of entry ids scored by lease deadline,
-- "c": its concurrency, "d": its delay in ms) is granted when fewer than "c" unexpired members
-- hold the host and the host's next-allowed key (s .. ':next', expiring when the delay has
-- passed) is gone. The first grantable entry of the window is taken; the entries of a host that
-- is not grantable stay where they are, in order. With AutoThrottle shared, the delay is the
-- larger of "d" and the host's AutoThrottle delay (s .. ':throttle', throttle.lua; the start
-- delay while it is absent). Returns the entry; else the ms until the first host of the window
-- held back by its delay may be asked again, or false (nothing waits for a delay).
local lease = tonumber(ARGV[1])
local window = tonumber(ARGV[3])
local now = now_ms()
for i = 6, #ARGV do
  if redis.call('ZSCORE', KEYS[2], ARGV[i])
     and (KEYS[3] == '' or redis.call('HGET', KEYS[3], ARGV[i]) == ARGV[2]) then
    release(ARGV[i])
  end
end
local function grant(payload)
  redis.call('ZREM', KEYS[1], payload)
  redis.call('ZADD', KEYS[2], now + lease, payload)
  if KEYS[3] ~= '' then redis.call('HSET', KEYS[3], payload, ARGV[2]) end
  return payload
end
if window <= 0 then
  local items = redis.call('ZRANGE', KEYS[1], 0, 0)
  if #items == 0 then return false end
  return grant(items[1])
end
local waiting = {}
local soonest = false
for _, payload in ipairs(redis.call('ZRANGE', KEYS[1], 0, window - 1)) do
  local key, obj = slot_of(payload)
  -- no host slot (or unreadable: the worker dead-letters it): nothing to hold it back
  if not key then return grant(payload) end
  if not waiting[key] then
    local limit = tonumber(obj['c']) or 0
    -- -2: no such key; -1: a key without a TTL, which is not the grant's (it always sets one):
    -- ignored (and replaced below), or the host would wait for it forever
    local wait = redis.call('PTTL', key .. ':next')
    local free = wait < 0
    if wait > 0 and (not soonest or wait < soonest) then soonest = wait end
    if free and limit > 0 then
      redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
      free = redis.call('ZCARD', key) < limit
    end
    if free then
      if limit > 0 then redis.call('ZADD', key, now + lease, tostring(obj['id'])) end
      local delay = tonumber(obj['d']) or 0
      if ARGV[5] ~= '' then
        local shared = tonumber(redis.call('GET', key .. ':throttle') or ARGV[5]) or 0
        if shared > delay then delay = shared end
      end
      if delay > 0 then
        if ARGV[4] == '1' then
          -- uniform(0, 1) from the Redis clock's microseconds and the entry id (Lua's
          -- math.random after math.randomseed(now) is nearly linear in the seed)
          local t = redis.call('TIME')
          local h = redis.sha1hex(t[1] .. '.' .. t[2] .. ':' .. tostring(obj['id']))
          delay = delay * (0.5 + tonumber(string.sub(h, 1, 8), 16) / 4294967296)
        end
        delay = math.floor(delay)
        if delay > 0 then redis.call('SET', key .. ':next', now + delay, 'PX', delay) end
      end
      return grant(payload)
    end
    waiting[key] = true
  end
end
return soonest
