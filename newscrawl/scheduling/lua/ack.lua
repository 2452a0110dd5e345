-- KEYS: inflight, pending, failures, failed-this-run set, seen shard...
-- ARGV: payload, outcome, fp, pending flag, day, max attempts, failed-this-run TTL (0: none),
--       seen member... (one per shard)
local ACK_LOST = -1
local ACK_RELEASED = 0
local ACK_DONE = 1
local ACK_FAILED = 2
local ACK_GAVE_UP = 3
local OUTCOME_DONE = 'done'
local OUTCOME_FAILED = 'failed'

if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return ACK_LOST end
if ARGV[4] == '1' then
  if redis.call('HINCRBY', KEYS[2], ARGV[3], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[3]) end
end
local function mark_done()
  for i = 5, #KEYS do redis.call('ZADD', KEYS[i], 'GT', ARGV[5], ARGV[i + 3]) end
  redis.call('HDEL', KEYS[3], ARGV[3])
end
local outcome = ARGV[2]
if outcome == OUTCOME_DONE then
  mark_done()
  return ACK_DONE
elseif outcome == OUTCOME_FAILED then
  local attempts = 0
  local record = redis.call('HGET', KEYS[3], ARGV[3])
  if record then attempts = tonumber(string.match(record, '^(%d+)')) or 0 end
  attempts = attempts + 1
  if attempts >= tonumber(ARGV[6]) then
    mark_done()
    return ACK_GAVE_UP
  end
  redis.call('HSET', KEYS[3], ARGV[3], attempts .. ':' .. ARGV[5])
  -- one attempt per run: later links in this run do not queue it again (see push.lua)
  if tonumber(ARGV[7]) > 0 then
    redis.call('SADD', KEYS[4], ARGV[3])
    redis.call('EXPIRE', KEYS[4], ARGV[7])
  end
  return ACK_FAILED
end
return ACK_RELEASED
