-- Start a run or join the current one (run.py). KEYS: run, queue, inflight, pending
-- ARGV: new run id, ttl   Returns {RUN_STARTED or RUN_JOINED, the run's id}.
local RUN_JOINED = 0
local RUN_STARTED = 1

local current = redis.call('GET', KEYS[1])
if current then return {RUN_JOINED, current} end
redis.call('SET', KEYS[1], ARGV[1], 'EX', ARGV[2])
if redis.call('ZCARD', KEYS[2]) == 0 and redis.call('ZCARD', KEYS[3]) == 0 then
  redis.call('DEL', KEYS[4])
end
return {RUN_STARTED, ARGV[1]}
