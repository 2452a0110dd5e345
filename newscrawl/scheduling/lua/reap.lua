-- KEYS: inflight, queue, seq, owners hash ('' for none)   ARGV: limit
-- Returns how many expired leases were requeued.
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now_ms(), 'LIMIT', 0, ARGV[1])
for _, payload in ipairs(expired) do
  redis.call('ZREM', KEYS[1], payload)
  release(payload)
  if KEYS[4] ~= '' then redis.call('HDEL', KEYS[4], payload) end
  push(KEYS[2], KEYS[3], payload, priority_of(payload))
end
return #expired
