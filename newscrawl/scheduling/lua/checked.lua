-- Articles done with the check (or that will not reach it): out of the run's order.
-- KEYS: the run's unchecked set, its days hash, its arrived hash; ARGV: members
for _, member in ipairs(ARGV) do
  local day = redis.call('HGET', KEYS[2], member)
  if day then
    -- 't<day>': a link whose time of day was known, in its day's set all the same
    if string.sub(day, 1, 1) == 't' then day = string.sub(day, 2) end
    redis.call('ZREM', KEYS[1] .. ':day:' .. day, member)
    redis.call('HDEL', KEYS[2], member)
  end
  redis.call('HDEL', KEYS[3], member)
  redis.call('ZREM', KEYS[1], member)
end
return 0
