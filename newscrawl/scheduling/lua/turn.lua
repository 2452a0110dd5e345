-- Whether an article may go through the near-duplicate check now (the run's order).
-- KEYS: the run's unchecked set ("<site>\n<url>" scored by order number), its days hash
--       (member -> the day, for links whose only known date was a day; 't<day>' for links
--       whose time of day was known too), its arrived hash
--       (member -> 's': it reached the check naming another outlet as its source, 'n': not)
-- ARGV: the article's member, its site's member prefix ("<site>\n"), 's' or 'n', the TTL (s) of
--       the arrived hash
-- An article waits while an article of another site with a lower number is unchecked, except,
-- for an article naming no source, a same-day one known by its day alone that arrived naming
-- a source (a reprint, deferring to it). An article naming a source whose date was a day also waits while another
-- site's article of that day has not arrived, or arrived naming none (the original it may copy
-- is published the same day), timed ones included: a day counts from 00:00, so a reprint known
-- by its day alone comes before a same-day original whose time is known. An article whose
-- time is known does not wait for such a reprint of its day (it defers), whether it names a
-- source or not: one naming a source that waited would close a cycle through a timed one
-- naming none with a number between theirs. Two same-day articles known by their day alone
-- that both name a source (an original may name its own paper) go by number (by rank among
-- links queued together): neither defers to the other.
-- Links are numbered in date order within one release (the links queued together); an article
-- with a date does not wait for another release's lower number of a later day or of no date,
-- so a late release (NEWSCRAWL_ARTICLE_WAIT reached) closes no wait cycle either.
-- Returns NOT_ORDERED when the article has no order number, GO, or {WAIT, the member waited for,
-- the article's own number}.
local NOT_ORDERED = -1
local GO = 0
local WAIT = 1
local member = ARGV[1]
local number = redis.call('ZSCORE', KEYS[1], member)
if not number then return NOT_ORDERED end
redis.call('HSET', KEYS[3], member, ARGV[3])
redis.call('EXPIRE', KEYS[3], ARGV[4])
local day = redis.call('HGET', KEYS[2], member)
local timed = false
if day and string.sub(day, 1, 1) == 't' then
  day = string.sub(day, 2)
  timed = true
end
local mine = ARGV[2]
local function other(m) return string.sub(m, 1, #mine) ~= mine end
local offset = 0
while true do
  local rows = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. number, 'LIMIT', offset, 256)
  for _, m in ipairs(rows) do
    if other(m) then
      local known = day and redis.call('HGET', KEYS[2], m)
      local deferring = day and (timed or ARGV[3] ~= 's') and known == day
        and redis.call('HGET', KEYS[3], m) == 's'
      -- a lower number of a later day, or of no date, comes from an earlier release (links
      -- are numbered in date order within one): the date decides, not the number
      local later = day and (not known or tonumber((string.gsub(known, '^t', ''))) > tonumber(day))
      if not deferring and not later then return {WAIT, m, number} end
    end
  end
  if #rows < 256 then break end
  offset = offset + #rows
end
if day and not timed and ARGV[3] == 's' then
  for _, m in ipairs(redis.call('ZRANGE', KEYS[1] .. ':day:' .. day, 0, -1)) do
    -- (a member checked by a worker that did not clean the day set up is not waited for)
    if other(m) and redis.call('HGET', KEYS[3], m) ~= 's'
        and redis.call('ZSCORE', KEYS[1], m) then
      return {WAIT, m, number}
    end
  end
end
return GO
