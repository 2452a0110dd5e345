-- KEYS: inflight   ARGV: lease ms, payload...   Returns how many leases were renewed.
local deadline = now_ms() + tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  if redis.call('ZADD', KEYS[1], 'XX', 'CH', deadline, ARGV[i]) == 1 then
    n = n + 1
    -- the host slot it holds lives as long as its lease
    local key, obj = slot_of(ARGV[i])
    if key then redis.call('ZADD', key, 'XX', deadline, tostring(obj['id'])) end
  end
end
return n
