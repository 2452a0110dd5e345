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
-- The host slot of an entry (its "s" field: the slots key of its host, set by the scheduler's
-- politeness) and the decoded entry; nil for an entry without one or that does not parse.
local function slot_of(payload)
  local ok, obj = pcall(cjson.decode, payload)
  if ok and type(obj) == 'table' and type(obj['s']) == 'string' and obj['s'] ~= '' then
    return obj['s'], obj
  end
  return nil, nil
end
-- Free the host slot an entry holds (it left the in-flight set).
local function release(payload)
  local key, obj = slot_of(payload)
  if key then redis.call('ZREM', key, tostring(obj['id'])) end
end
