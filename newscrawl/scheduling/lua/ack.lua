-- KEYS: inflight, pending, failures, failed-this-run set, retry, owners hash ('' for none),
--       seen shard...
-- ARGV: payload, outcome, fp, pending flag, day, max attempts, failed-this-run TTL (0: none),
--       retry record (JSON kept in the retry hash until a later run fetches it), worker id,
--       seen member... (one per shard)
local ACK_LOST = -1
local ACK_RELEASED = 0
local ACK_DONE = 1
local ACK_FAILED = 2
local ACK_GAVE_UP = 3
local OUTCOME_DONE = 'done'
local OUTCOME_FAILED = 'failed'
local OUTCOME_SOURCE_DONE = 'srcdone'
local OUTCOME_SOURCE_FAILED = 'srcfailed'

if KEYS[6] ~= '' and redis.call('HGET', KEYS[6], ARGV[1]) == ARGV[9] then
  redis.call('HDEL', KEYS[6], ARGV[1])
end
if redis.call('ZREM', KEYS[1], ARGV[1]) == 0 then return ACK_LOST end
release(ARGV[1])
if ARGV[4] == '1' then
  if redis.call('HINCRBY', KEYS[2], ARGV[3], -1) <= 0 then redis.call('HDEL', KEYS[2], ARGV[3]) end
end
-- no failed attempt left on record, nothing to retry on a later run
local function forget()
  redis.call('HDEL', KEYS[3], ARGV[3])
  redis.call('HDEL', KEYS[5], ARGV[3])
end
local function mark_done()
  for i = 7, #KEYS do redis.call('ZADD', KEYS[i], 'GT', ARGV[5], ARGV[i + 3]) end
  forget()
end
-- a failed attempt: counted once a day (the record "<attempts>:<day of the last one>": reruns
-- on the day of a failure, after a Ctrl-C or by an hourly cron, spend no more of them); queued
-- again by the next run's first worker (retry hash) until max attempts, then given up (an
-- article: marked done; a source page: forgotten)
local function failed(give_up)
  local attempts = 0
  local record = redis.call('HGET', KEYS[3], ARGV[3])
  local counted_today = false
  if record then
    attempts = tonumber(string.match(record, '^(%d+)')) or 0
    counted_today = string.match(record, ':(%-?%d+)$') == ARGV[5]
  end
  if not counted_today then attempts = attempts + 1 end
  if attempts >= tonumber(ARGV[6]) then
    give_up()
    return ACK_GAVE_UP
  end
  redis.call('HSET', KEYS[3], ARGV[3], attempts .. ':' .. ARGV[5])
  redis.call('HSET', KEYS[5], ARGV[3], ARGV[8])
  -- one attempt per run: later links in this run do not queue it again (see push.lua)
  if tonumber(ARGV[7]) > 0 then
    redis.call('SADD', KEYS[4], ARGV[3])
    redis.call('EXPIRE', KEYS[4], ARGV[7])
  end
  return ACK_FAILED
end
local outcome = ARGV[2]
if outcome == OUTCOME_DONE then
  mark_done()
  return ACK_DONE
elseif outcome == OUTCOME_FAILED then
  return failed(mark_done)
elseif outcome == OUTCOME_SOURCE_FAILED then
  return failed(forget)
elseif outcome == OUTCOME_SOURCE_DONE then
  forget()
end
return ACK_RELEASED
