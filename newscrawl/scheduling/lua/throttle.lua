-- AutoThrottle for the whole cluster (docs/design/scheduling.md): one response of a host moves
-- the host's shared delay, as Scrapy 2.19's AutoThrottle._adjust_delay moves a downloader slot's.
-- KEYS: the host's throttle key (its slots key .. ':throttle': the delay in ms)
-- ARGV: latency ms, AUTOTHROTTLE_TARGET_CONCURRENCY, min delay ms (the site's delay or
--       DOWNLOAD_DELAY), AUTOTHROTTLE_MAX_DELAY ms, start delay ms (used while the key is absent),
--       '1' if the response's status is 200, the key's TTL in ms
-- Returns {old delay, new delay} in ms, as strings (a reply would truncate numbers).
local min_delay = tonumber(ARGV[3])
local old = tonumber(redis.call('GET', KEYS[1]) or '')
if not old then old = math.max(min_delay, tonumber(ARGV[5])) end
-- a host answering in `latency` is asked every latency / N to have N requests in flight
local target = tonumber(ARGV[1]) / tonumber(ARGV[2])
-- halfway to the target, or the target itself when it is above the mean
local new = math.max(target, (old + target) / 2)
new = math.min(math.max(min_delay, new), tonumber(ARGV[4]))
-- an error page or a redirect (usually small and fast) may not lower the delay
if ARGV[6] ~= '1' and new <= old then
  redis.call('PEXPIRE', KEYS[1], ARGV[7])
  return {tostring(old), tostring(old)}
end
redis.call('SET', KEYS[1], string.format('%.3f', new), 'PX', ARGV[7])
return {tostring(old), tostring(new)}
