-- KEYS: queue, seq, pending, seen shard, listseen
-- ARGV: payload, priority, mode, fp, seen member, day, listseen ttl
local PUSHED = 1
local FILTERED_DONE = 0
local FILTERED_PENDING = -1
local FILTERED_RUN = -2
local FILTERED_FAILED_THIS_RUN = -3
local MODE_ONCE = 'once'
local MODE_RUN = 'run'
local MODE_FORCE_PENDING = 'forcepending'

local mode = ARGV[3]
if mode == MODE_ONCE then
  if redis.call('ZSCORE', KEYS[4], ARGV[5]) then
    redis.call('ZADD', KEYS[4], 'XX', 'GT', ARGV[6], ARGV[5])
    return FILTERED_DONE
  end
  if redis.call('HEXISTS', KEYS[3], ARGV[4]) == 1 then return FILTERED_PENDING end
  -- failed earlier in this run: its next attempt belongs to a later run
  if redis.call('SISMEMBER', KEYS[5], ARGV[4]) == 1 then return FILTERED_FAILED_THIS_RUN end
  redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
elseif mode == MODE_RUN then
  if redis.call('SADD', KEYS[5], ARGV[4]) == 0 then return FILTERED_RUN end
  redis.call('EXPIRE', KEYS[5], ARGV[7])
elseif mode == MODE_FORCE_PENDING then
  redis.call('HINCRBY', KEYS[3], ARGV[4], 1)
end
push(KEYS[1], KEYS[2], ARGV[1], tonumber(ARGV[2]))
return PUSHED
