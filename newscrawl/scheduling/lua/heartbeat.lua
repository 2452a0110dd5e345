-- A worker's heartbeat (run.py): refresh its own, keep the run marker alive while the run has a
-- live worker, and rescue the entries of workers whose heartbeat is gone.
-- KEYS: registry, heartbeat, run, run sites, inflight, queue, seq, owners, beats resumed,
--       last beat
-- ARGV: worker id, heartbeat ttl ms, run id, info JSON, worker key prefix, run marker ttl (s),
--       how long a worker waits for Redis before it gives up (ms)
-- Returns {live workers other than this one, requests rescued, those not idle}.
-- Redis away (paused, restarted, unreachable) longer than the heartbeats: this worker's own
-- heartbeat is gone, or no worker beat for 3/4 of a ttl (they beat every quarter) while one may
-- still be waiting for Redis. Other heartbeats may have run out in the same gap: none counts as
-- dead for two ttls, time for the others to reach Redis again and beat (sweep's `resumed`).
local now, ttl = now_ms(), tonumber(ARGV[2])
local last = tonumber(redis.call('GET', KEYS[10]) or '')
if redis.call('EXISTS', KEYS[2]) == 0
    or (last and now - last > ttl * 3 / 4 and now - last < tonumber(ARGV[7])) then
  redis.call('SET', KEYS[9], ARGV[1], 'PX', 2 * ttl)
end
redis.call('SET', KEYS[10], now, 'PX', ARGV[7])
register(KEYS[1], KEYS[2], ARGV[1], ARGV[3], ARGV[2], ARGV[4])
if redis.call('GET', KEYS[3]) == ARGV[3] then
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  redis.call('EXPIRE', KEYS[4], ARGV[6])
end
local live, rescued, busy = sweep(KEYS[1], KEYS[5], KEYS[6], KEYS[7], KEYS[8], ARGV[5], ARGV[1],
                                  KEYS[9])
return {live, rescued, busy}
