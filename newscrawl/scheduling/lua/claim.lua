-- Start a run, join the current one, or take over a run none of whose workers is alive (run.py).
-- KEYS: run, run sites, queue, inflight, pending, seq, registry, heartbeat, owners,
--       beats resumed (workers.lua's sweep), last beat (heartbeat.lua)
-- ARGV: new run id, run ttl (s), worker id, heartbeat ttl ms, info JSON, worker key prefix,
--       sites fingerprint, how long a worker waits for Redis before it gives up (ms)
-- Returns {RUN_* code, the run's id, the run taken over or refused ('' if none), requests
--          rescued, the sites fingerprint of the run joined, refused or taken over ('' if none)}.
local RUN_JOINED = 0
local RUN_STARTED = 1
local RUN_TOOK_OVER = 2
local RUN_REFUSED = 3

local live, rescued = sweep(KEYS[7], KEYS[4], KEYS[3], KEYS[6], KEYS[9], ARGV[6], ARGV[3], KEYS[10])
redis.call('SET', KEYS[11], now_ms(), 'PX', ARGV[8])
local current = redis.call('GET', KEYS[1])
local sites = redis.call('GET', KEYS[2]) or ''
if current and live > 0 then
  if sites ~= '' and sites ~= ARGV[7] then return {RUN_REFUSED, current, current, rescued, sites} end
  register(KEYS[7], KEYS[8], ARGV[3], current, ARGV[4], ARGV[5])
  return {RUN_JOINED, current, '', rescued, sites}
end
-- no run, or none of its workers is alive. With no live worker at all, every entry left in
-- flight is a dead worker's (one that never registered included).
if live == 0 then
  for _, payload in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
    release(payload)
    push(KEYS[3], KEYS[6], payload, priority_of(payload))
    rescued = rescued + 1
  end
  redis.call('DEL', KEYS[4], KEYS[9])
end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
redis.call('SET', KEYS[2], ARGV[7], 'EX', ARGV[2])
register(KEYS[7], KEYS[8], ARGV[3], ARGV[1], ARGV[4], ARGV[5])
if redis.call('ZCARD', KEYS[3]) == 0 and redis.call('ZCARD', KEYS[4]) == 0 then
  redis.call('DEL', KEYS[5])
end
local code = RUN_STARTED
if current then code = RUN_TOOK_OVER end
return {code, ARGV[1], current or '', rescued, sites}
