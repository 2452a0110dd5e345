-- The list pages a walk may fetch (lists.py). KEYS: walk set   ARGV: cap, ttl, fp...
-- Returns one result per fp.
local ADMITTED = 1
local ALREADY_ADMITTED = 0
local OVER_CAP = -1

local n = redis.call('SCARD', KEYS[1])
local cap = tonumber(ARGV[1])
local out = {}
for i = 3, #ARGV do
  if redis.call('SISMEMBER', KEYS[1], ARGV[i]) == 1 then
    out[#out + 1] = ALREADY_ADMITTED
  elseif n >= cap then
    out[#out + 1] = OVER_CAP
  else
    redis.call('SADD', KEYS[1], ARGV[i])
    n = n + 1
    out[#out + 1] = ADMITTED
  end
end
redis.call('EXPIRE', KEYS[1], ARGV[2])
return out
