-- Functions of the queue's scripts (prepended to push, pop, renew, reap and requeue).
local PRIORITY_SPAN = 4294967296 -- score = -priority * PRIORITY_SPAN + sequence number
local MAX_PRIORITY = 1048576

local function push(queue, seq, payload, priority)
  local n = redis.call('INCR', seq)
  redis.call('ZADD', queue, -priority * PRIORITY_SPAN + n, payload)
end
local function priority_of(payload)
  local ok, obj = pcall(cjson.decode, payload)
  if ok and type(obj) == 'table' and type(obj['r']) == 'table'
     and type(obj['r']['priority']) == 'number' then
    local p = obj['r']['priority']
    if p > MAX_PRIORITY then p = MAX_PRIORITY elseif p < -MAX_PRIORITY then p = -MAX_PRIORITY end
    return p
  end
  return 0
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
