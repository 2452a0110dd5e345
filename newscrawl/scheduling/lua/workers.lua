-- Worker liveness (run.py), prepended to heartbeat.lua and claim.lua after lib.lua.
-- A worker is alive while its heartbeat key ({prefix}:{spider}:worker:{id}) exists; the
-- registry hash lists the workers that registered, the owners hash the worker holding each
-- in-flight entry. The entries of a worker found dead go back to the queue at once (not when
-- their leases expire).
local function rescue(inflight, queue, seq, owners, dead)
  local n = 0
  local flat = redis.call('HGETALL', owners)
  for i = 1, #flat, 2 do
    if dead[flat[i + 1]] then
      redis.call('HDEL', owners, flat[i])
      if redis.call('ZREM', inflight, flat[i]) == 1 then
        release(flat[i])
        push(queue, seq, flat[i], priority_of(flat[i]))
        n = n + 1
      end
    end
  end
  return n
end
-- Forget the dead workers of the registry (rescuing their entries); returns the number of live
-- workers other than `me`, the number of requests rescued and how many of those live workers
-- were not idle at their last heartbeat (their info's "idle" flag).
-- `resumed` (a key): set while the heartbeats resume after Redis was away (a worker found its
-- own heartbeat gone): every heartbeat ran out together, so a registered worker without one is
-- not dead yet, only late (live and busy) until the key expires.
local function sweep(registry, inflight, queue, seq, owners, worker_prefix, me, resumed)
  local live, busy, dead, any = 0, 0, {}, false
  local grace = redis.call('PTTL', resumed) > 0  -- (a key of ours always has a TTL)
  for _, id in ipairs(redis.call('HKEYS', registry)) do
    if id ~= me then
      if redis.call('EXISTS', worker_prefix .. id) == 1 then
        live = live + 1
        local ok, info = pcall(cjson.decode, redis.call('HGET', registry, id))
        if not (ok and type(info) == 'table' and info['idle'] == true) then busy = busy + 1 end
      elseif grace then
        live = live + 1
        busy = busy + 1
      else
        dead[id] = true
        any = true
        redis.call('HDEL', registry, id)
      end
    end
  end
  local rescued = 0
  if any then rescued = rescue(inflight, queue, seq, owners, dead) end
  return live, rescued, busy
end
local function register(registry, heartbeat, me, run, ttl_ms, info)
  redis.call('SET', heartbeat, run, 'PX', ttl_ms)
  redis.call('HSET', registry, me, info)
end
