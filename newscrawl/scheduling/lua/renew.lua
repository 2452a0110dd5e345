-- KEYS: inflight   ARGV: lease ms, payload...   Returns how many leases were renewed.
local deadline = now_ms() + tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  n = n + redis.call('ZADD', KEYS[1], 'XX', 'CH', deadline, ARGV[i])
end
return n
