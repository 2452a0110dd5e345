-- A worker's heartbeat (run.py): refresh its own, keep the run marker alive while the run has a
-- live worker, and rescue the entries of workers whose heartbeat is gone.
-- KEYS: registry, heartbeat, run, run sites, inflight, queue, seq, owners, beats resumed
-- ARGV: worker id, heartbeat ttl ms, run id, info JSON, worker key prefix, run marker ttl (s)
-- Returns {live workers other than this one, requests rescued, those not idle}.
-- This worker's own heartbeat gone: Redis was away (paused, restarted) or this worker stalled
-- longer than the ttl. Every other heartbeat may have run out in the same gap: none counts as
-- dead for two ttls, time for the others to reach Redis again and beat (sweep's `resumed`).
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('SET', KEYS[9], ARGV[1], 'PX', 2 * tonumber(ARGV[2]))
end
register(KEYS[1], KEYS[2], ARGV[1], ARGV[3], ARGV[2], ARGV[4])
if redis.call('GET', KEYS[3]) == ARGV[3] then
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  redis.call('EXPIRE', KEYS[4], ARGV[6])
end
local live, rescued, busy = sweep(KEYS[1], KEYS[5], KEYS[6], KEYS[7], KEYS[8], ARGV[5], ARGV[1],
                                  KEYS[9])
return {live, rescued, busy}
