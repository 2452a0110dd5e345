-- Whether an article may go through the near-duplicate check now (the run's order).
-- KEYS: the run's unchecked set ("<site>\n<url>" scored by order number)
-- ARGV: the article's member, its site's member prefix ("<site>\n")
-- Returns NOT_ORDERED when the article has no order number, WAIT while an article of another
-- site with a lower number is unchecked, else GO.
local NOT_ORDERED = -1
local GO = 0
local WAIT = 1
local number = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not number then return NOT_ORDERED end
local mine = ARGV[2]
local offset = 0
while true do
  local rows = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. number, 'LIMIT', offset, 256)
  if #rows == 0 then return GO end
  for _, member in ipairs(rows) do
    if string.sub(member, 1, #mine) ~= mine then return WAIT end
  end
  if #rows < 256 then return GO end
  offset = offset + #rows
end
