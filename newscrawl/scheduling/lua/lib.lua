-- Functions of the queue's scripts (prepended to push, pop, renew, reap and requeue).
local PRIORITY_SPAN = 4294967296 -- score = -priority * PRIORITY_SPAN + sequence number
local MAX_PRIORITY = 1048576

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
-- Queue an entry: score = -priority * PRIORITY_SPAN + its place. Without a host slot its place
-- is the next sequence number (first in, first out). With one, the hosts take turns (start-time
-- fair queueing): the entry goes one place behind its host's last entry (queue .. ':hosts', host
-- slot key -> last place) and no earlier than the first entry of its priority, so every host with
-- entries queued has one among the first places and the hosts' queues drain together.
local function push(queue, seq, payload, priority)
  local n = redis.call('INCR', seq)
  local base = -priority * PRIORITY_SPAN
  local key = slot_of(payload)
  if key then
    local hosts = queue .. ':hosts'
    local head = redis.call('ZRANGEBYSCORE', queue, string.format('%.0f', base),
      '(' .. string.format('%.0f', base + PRIORITY_SPAN), 'WITHSCORES', 'LIMIT', 0, 1)
    local place = n
    if head[2] then place = tonumber(head[2]) - base end
    local last = tonumber(redis.call('HGET', hosts, key)) or 0
    if last + 1 > place then place = last + 1 end
    redis.call('HSET', hosts, key, place)
    n = place
  end
  redis.call('ZADD', queue, string.format('%.0f', base + n), payload)
end
-- Free the host slot an entry holds (it left the in-flight set).
local function release(payload)
  local key, obj = slot_of(payload)
  if key then redis.call('ZREM', key, tostring(obj['id'])) end
end
