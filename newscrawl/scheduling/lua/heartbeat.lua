-- A worker's heartbeat (run.py): refresh its own, keep the run marker alive while the run has a
-- live worker, and rescue the entries of workers whose heartbeat is gone.
-- KEYS: registry, heartbeat, run, run sites, inflight, queue, seq, owners
-- ARGV: worker id, heartbeat ttl ms, run id, info JSON, worker key prefix, run marker ttl (s)
-- Returns {live workers other than this one, requests rescued, those not idle}.
register(KEYS[1], KEYS[2], ARGV[1], ARGV[3], ARGV[2], ARGV[4])
if redis.call('GET', KEYS[3]) == ARGV[3] then
  redis.call('EXPIRE', KEYS[3], ARGV[6])
  redis.call('EXPIRE', KEYS[4], ARGV[6])
end
local live, rescued, busy = sweep(KEYS[1], KEYS[5], KEYS[6], KEYS[7], KEYS[8], ARGV[5], ARGV[1])
return {live, rescued, busy}
