-- KEYS: queue, inflight   ARGV: lease ms
local items = redis.call('ZRANGE', KEYS[1], 0, 0)
if #items == 0 then return false end
redis.call('ZREM', KEYS[1], items[1])
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[1]), items[1])
return items[1]
