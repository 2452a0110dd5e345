-- KEYS: queue, inflight, owners hash ('' for none)   ARGV: lease ms, worker id
local items = redis.call('ZRANGE', KEYS[1], 0, 0)
if #items == 0 then return false end
redis.call('ZREM', KEYS[1], items[1])
redis.call('ZADD', KEYS[2], now_ms() + tonumber(ARGV[1]), items[1])
if KEYS[3] ~= '' then redis.call('HSET', KEYS[3], items[1], ARGV[2]) end
return items[1]
