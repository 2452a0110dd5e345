-- Articles done with the check (or that will not reach it): out of the run's order.
-- KEYS: the run's unchecked set, its days hash, its arrived hash; ARGV: ttl (s), members
-- A member that had no place in the order (an article an earlier run queued, met before the run
-- adopted it: CheckOrder.adopt) is recorded in <unchecked>:done, so the adoption leaves it out.
local done = KEYS[1] .. ':done'
for i = 2, #ARGV do
  local member = ARGV[i]
  local day = redis.call('HGET', KEYS[2], member)
  if day then
    -- 't<day>': a link whose time of day was known, in its day's set all the same
    if string.sub(day, 1, 1) == 't' then day = string.sub(day, 2) end
    redis.call('ZREM', KEYS[1] .. ':day:' .. day, member)
    redis.call('HDEL', KEYS[2], member)
  end
  redis.call('HDEL', KEYS[3], member)
  if redis.call('ZREM', KEYS[1], member) == 0 then
    redis.call('SADD', done, member)
    redis.call('EXPIRE', done, ARGV[1])
  end
end
return 0
