-- KEYS: inflight, queue, seq   ARGV: payload   Returns 1 if it was in flight (requeued), else 0.
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
push(KEYS[2], KEYS[3], ARGV[1], priority_of(ARGV[1]))
return 1
