-- KEYS: inflight, queue, seq, owners hash ('' for none)   ARGV: payload, worker id
-- Returns 1 if it was in flight (requeued), else 0.
if KEYS[4] ~= '' and redis.call('HGET', KEYS[4], ARGV[1]) == ARGV[2] then
  redis.call('HDEL', KEYS[4], ARGV[1])
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return 0 end
release(ARGV[1])
push(KEYS[2], KEYS[3], ARGV[1], priority_of(ARGV[1]))
return 1
