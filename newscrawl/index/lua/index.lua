-- newscrawl near-duplicate index: one script for check_and_add / query / add / remove.
--
-- KEYS[1]   meta hash ({prefix}:simhash:meta)
-- KEYS[2-5] the four bucket hashes of the fingerprint (block 0 = most significant 16 bits)
-- ARGV[1] mode: "check_add" | "query" | "add" | "remove"
-- ARGV[2] fingerprint, 8 bytes big-endian (never a Lua number: Lua numbers are doubles)
-- ARGV[3] fingerprint configuration version ("" = unchecked)
-- ARGV[4] max Hamming distance (0..7; 4..7 read each block's one-bit neighbour buckets too)
-- ARGV[5] today's day number (days since the Unix epoch)
-- ARGV[6] oldest day still compared (-1 = no retention)
-- ARGV[7] doc id (check_add / add; remove: "" = any)
-- ARGV[8] bucket key format, e.g. 'newscrawl:simhash:%d:%04x' (from newscrawl/keys.py)
-- ARGV[9] now (seconds since the epoch, for the meta hash)
-- ARGV[10] (optional) the text sketch (newscrawl/simhash/sketch.py, SKETCH_BYTES bytes), then
--          ARGV[11-13] the confirmation thresholds in percent: text containment, number
--          containment, resemblance of a candidate found by its sketch alone; ARGV[14] the
--          containment (percent) the minhash bins must be unlikely under and ARGV[15] the
--          largest chance per million of the evidence between distinct texts (both absent: no
--          such check); with a sketch
--          KEYS[6-7] are its two minhash band buckets ({prefix}:simhash:2:{band 0} and
--          {prefix}:simhash:3:{band 1}: hashes shared with blocks 2 and 3).
--
-- Bucket layout: in the hash of block b, field = the fingerprint's six bytes outside block b
-- (the bucket's key holds the other two: rest(f, b)); block-0 value "<day>:<doc id>" (no sketch)
-- or <code><2-byte day><sketch><doc id less a URL prefix> (parse_record); several docs with the
-- same fingerprint: "\0" then (<2-byte length><record>)* (split_records); blocks 1-3 value ""
-- (a fingerprint's day is read from its block-0 record); band entries, in the hashes of blocks 2 and 3 keyed by the band's value: field = the
-- 8-byte fingerprint (a block entry's field has six), value = the sketch's 4-bit minhash value of
-- that band's bin in decimal (a cheap check before the record is read). Sharing the block hashes saves
-- 131,072 keys; every scan tells the two kinds apart by field length. Returns, for check_add/query, a flat array
-- {distance, fingerprint hex, doc id, ...} sorted by distance, every doc stored with a matching
-- fingerprint (check_add: at most one match, the first; an
-- empty array means "no near-duplicate, fingerprint added"); add: 1 if new else 0; remove: 1/0.
--
-- Retention (ARGV[6] >= 0): a stored fingerprint whose block-0 day is older than ARGV[6] is not a
-- match; check_add deletes such an entry when it is within max distance (the only entries whose
-- values are read). Expired entries that are not near are left to prune.lua (SimhashIndex.prune,
-- run once a day by the crawl's IndexPruneExtension), keeping the bucket fetch at HKEYS.

local mode = ARGV[1]
local fp = ARGV[2]
local version = ARGV[3]
local maxd = tonumber(ARGV[4])
local today = tonumber(ARGV[5])
local min_day = tonumber(ARGV[6])
local doc = ARGV[7]
local bucket_format = ARGV[8]
local now = ARGV[9]
local meta = KEYS[1]
-- the text sketch (and its layout: shingle count, two band keys, number bits, minhash bins)
local SKETCH_LEN = 34
local SK_NUM, SK_NUM_END, SK_MIN, SK_MIN_END = 7, 18, 19, 34
-- the band entries live in the hashes of blocks 2 and 3 (bucket_key(2, band 0), bucket_key(3,
-- band 1)), told apart from those blocks' own entries by their 8-byte fields
local BAND0_BLOCK, BAND1_BLOCK = 2, 3
local qs = ARGV[10]
if qs == '' then
  qs = nil
end
local t_text = tonumber(ARGV[11] or '0')
local t_num = tonumber(ARGV[12] or '0')
local t_lsh = tonumber(ARGV[13] or '0')
local t_support = tonumber(ARGV[14] or '0')
local t_chance = tonumber(ARGV[15] or '-1')

if string.len(fp) ~= 8 then
  return redis.error_reply('NEWSCRAWL_BAD_FINGERPRINT expected 8 bytes')
end
if qs and (string.len(qs) ~= SKETCH_LEN or #KEYS < 7) then
  return redis.error_reply('NEWSCRAWL_BAD_SKETCH expected ' .. SKETCH_LEN .. ' bytes and 7 keys')
end
if qs and (today < 0 or today > 65535) and (mode == 'check_add' or mode == 'add') then
  -- a record with a sketch keeps its day in two bytes (1970-01-01 to 2149-06-06)
  return redis.error_reply('NEWSCRAWL_BAD_DAY ' .. today .. ' outside 0-65535')
end

if version ~= '' then
  local stored = redis.call('HGET', meta, 'version')
  if stored then
    if stored ~= version then
      return redis.error_reply('NEWSCRAWL_INCOMPATIBLE_INDEX ' .. stored)
    end
  elseif mode == 'check_add' or mode == 'add' then
    redis.call('HSET', meta, 'version', version)
  end
end


local function bucket_key(block, value)
  return string.format(bucket_format, block, value)
end

-- The field of 8-byte fingerprint f in the hash of block b (0-3): its other six bytes.
local function rest(f, b)
  if b == 0 then
    return string.sub(f, 3)
  elseif b == 3 then
    return string.sub(f, 1, 6)
  end
  return string.sub(f, 1, 2 * b) .. string.sub(f, 2 * b + 3)
end

-- Doc id prefixes a record with a sketch stores as its first byte (URLs are most doc ids).
local DOC_PREFIXES = {[1] = '', [2] = 'https://', [3] = 'http://', [4] = 'https://www.',
  [5] = 'http://www.'}

-- A block-0 record: day, doc id, sketch (nil when stored without one); nil when unreadable.
-- With a sketch: <code byte 1-5><day, 2 bytes big-endian><sketch><doc id without the prefix the
-- code names>; without: "<day>:<doc id>".
local function parse_record(v)
  local code = string.byte(v, 1)
  local prefix = code and DOC_PREFIXES[code]
  if prefix then
    if #v < 3 + SKETCH_LEN then
      return nil
    end
    local day = struct.unpack('>H', string.sub(v, 2, 3))
    return day, prefix .. string.sub(v, 4 + SKETCH_LEN), string.sub(v, 4, 3 + SKETCH_LEN)
  end
  local day = string.match(v, '^(%-?%d+):')
  if not day then
    return nil
  end
  return tonumber(day), string.sub(v, #day + 2), nil
end

-- The record of a sketch (see parse_record).
local function sketch_record(day, sketch, docid)
  local code = 1
  if string.sub(docid, 1, 8) == 'https://' then
    code = 2
    if string.sub(docid, 9, 12) == 'www.' then
      code = 4
    end
  elseif string.sub(docid, 1, 7) == 'http://' then
    code = 3
    if string.sub(docid, 8, 11) == 'www.' then
      code = 5
    end
  end
  return string.char(code) .. struct.pack('>H', day) .. sketch ..
    string.sub(docid, #DOC_PREFIXES[code] + 1)
end

-- A block-0 value holds one record, or several (one per distinct doc stored with this exact
-- fingerprint: texts with the same simhash that their sketches tell apart): then
-- "\0" .. (<2-byte big-endian length><record>)*. No record starts with byte 0 (code 1-5, a digit
-- or '-'), so a single record keeps its own bytes.
local function split_records(v)
  if string.byte(v, 1) ~= 0 then
    return {v}
  end
  local out = {}
  local pos = 2
  while pos + 1 <= #v do
    local n = struct.unpack('>H', string.sub(v, pos, pos + 1))
    out[#out + 1] = string.sub(v, pos + 2, pos + 1 + n)
    pos = pos + 2 + n
  end
  return out
end

local function join_records(records)
  if #records == 1 then
    return records[1]
  end
  local parts = {'\0'}
  for _, r in ipairs(records) do
    parts[#parts + 1] = struct.pack('>H', #r) .. r
  end
  return table.concat(parts)
end

-- The band bucket values and check values of a record's sketch (nil without one).
local function bands_of(record)
  local _, _, sk = parse_record(record)
  if not sk then
    return nil
  end
  local b0, b1 = struct.unpack('>HH', string.sub(sk, 3, 6))
  local c = string.byte(sk, SK_MIN)
  return b0, b1, tostring(bit.rshift(c, 4)), tostring(bit.band(c, 15))
end

-- Set the band entry of f in hash key to check value c; '*' when records of f with the same band
-- value disagree on it (any check passes).
local function set_band(key, f, c, shared)
  if shared then
    local old = redis.call('HGET', key, f)
    if old and old ~= c then
      c = '*'
    end
  end
  redis.call('HSET', key, f, c)
end

local function add_entry()
  local record
  if qs then
    record = sketch_record(today, qs, doc)
  else
    record = today .. ':' .. doc
  end
  local field = rest(fp, 0)
  local old = redis.call('HGET', KEYS[2], field)
  local records = {}
  if old then
    -- another doc stored with this exact fingerprint stays (its record is kept); a record of
    -- the same doc id is replaced
    for _, r in ipairs(split_records(old)) do
      local _, d = parse_record(r)
      if d ~= doc then
        records[#records + 1] = r
      end
    end
  end
  records[#records + 1] = record
  local created = redis.call('HSET', KEYS[2], field, join_records(records))
  for i = 3, 5 do
    redis.call('HSET', KEYS[i], rest(fp, i - 2), '')
  end
  if qs then
    local b = string.byte(qs, SK_MIN)
    -- the check value in decimal: "0"-"12" take no byte of their own in a ziplist/listpack
    set_band(KEYS[6], fp, tostring(bit.rshift(b, 4)), #records > 1)
    set_band(KEYS[7], fp, tostring(bit.band(b, 15)), #records > 1)
  end
  if created == 1 and redis.call('HINCRBY', meta, 'count', 1) == 1 then
    redis.call('HSETNX', meta, 'created', now)
  end
  return created
end

local function delete_entry(f, record)
  local c1, c2, c3, c4 = struct.unpack('>HHHH', f)
  -- the records' sketches name their band buckets
  if record == nil then
    local v = redis.pcall('HGET', bucket_key(0, c1), rest(f, 0))
    if type(v) == 'string' then
      record = v
    end
  end
  if record then
    for _, r in ipairs(split_records(record)) do
      local b0, b1 = bands_of(r)
      if b0 then
        redis.pcall('HDEL', bucket_key(BAND0_BLOCK, b0), f)
        redis.pcall('HDEL', bucket_key(BAND1_BLOCK, b1), f)
      end
    end
  end
  -- pcall: a foreign non-hash key under a bucket name must not abort the script between the
  -- deletions and the count update (Redis does not roll back what was done).
  local removed = redis.pcall('HDEL', bucket_key(0, c1), rest(f, 0))
  redis.pcall('HDEL', bucket_key(1, c2), rest(f, 1))
  redis.pcall('HDEL', bucket_key(2, c3), rest(f, 2))
  redis.pcall('HDEL', bucket_key(3, c4), rest(f, 3))
  if removed == 1 then
    redis.call('HINCRBY', meta, 'count', -1)
  end
  return removed
end

-- Keep only the records `keep` of fingerprint f (whose records were `all`): delete the
-- fingerprint when none is left, else store the rest and drop the band entries no kept record
-- uses (a kept record's entry is set again, its check value may have been shared).
local function keep_records(f, all, keep)
  if #keep == 0 then
    return delete_entry(f, join_records(all))
  end
  if #keep == #all then
    return 0
  end
  local c1 = struct.unpack('>H', f)
  redis.call('HSET', bucket_key(0, c1), rest(f, 0), join_records(keep))
  local used0, used1 = {}, {}
  for _, r in ipairs(keep) do
    local b0, b1, k0, k1 = bands_of(r)
    if b0 then
      used0[b0], used1[b1] = true, true
      redis.pcall('HSET', bucket_key(BAND0_BLOCK, b0), f, k0)
      redis.pcall('HSET', bucket_key(BAND1_BLOCK, b1), f, k1)
    end
  end
  for _, r in ipairs(all) do
    local b0, b1 = bands_of(r)
    if b0 then
      if not used0[b0] then
        redis.pcall('HDEL', bucket_key(BAND0_BLOCK, b0), f)
      end
      if not used1[b1] then
        redis.pcall('HDEL', bucket_key(BAND1_BLOCK, b1), f)
      end
    end
  end
  return 0
end

if mode == 'add' then
  return add_entry()
end

if mode == 'remove' then
  local v = redis.call('HGET', KEYS[2], rest(fp, 0))
  if not v then
    return 0
  end
  if doc == '' then
    return delete_entry(fp, v)
  end
  -- only this doc's record; the fingerprint goes when no other doc's record is left
  local all = split_records(v)
  local keep = {}
  for _, r in ipairs(all) do
    local _, d = parse_record(r)
    if d ~= doc then
      keep[#keep + 1] = r
    end
  end
  if #keep == #all then
    return 0
  end
  if #keep == 0 then
    return delete_entry(fp, v)
  end
  keep_records(fp, all, keep)
  return 1
end

local writing = (mode == 'check_add')

-- max distance 0-3: scan the four buckets. A stored fingerprint sharing several blocks with the
-- query sits in several of them: it is handled in the first (lowest) block it shares, skipped in
-- the others. The loops are the hot path (about 4 * n / 65536 candidates per call), so they
-- avoid C calls: one string.byte per candidate, then a cheap necessary condition (at most maxd
-- differing BYTES among the six outside the bucket's block) rejects nearly every candidate
-- before the exact bit count. (Max distance 4-7 reads 64 more buckets: see below.)
local band, bxor, unpack, sbyte = bit.band, bit.bxor, struct.unpack, string.byte
local qhi, qlo = unpack('>I4I4', fp)
local p1, p2, p3, p4, p5, p6, p7, p8 = sbyte(fp, 1, 8)
local retention = min_day >= 0
local matches = {}
local seen_any = {}

local function popcount8(v)
  local n = 0
  while v ~= 0 do
    v = band(v, v - 1)
    n = n + 1
  end
  return n
end

-- Whether a candidate's stored sketch confirms the query's (newscrawl/simhash/sketch.py,
-- confirms(): the same arithmetic). `wide`: found by its band bucket alone (beyond maxd), which
-- also needs the resemblance threshold.
local function confirm(cs, wide)
  -- 32 minhash bins of 4 bits, two a byte
  local same = 0
  for i = SK_MIN, SK_MIN_END do
    local x, y = sbyte(qs, i), sbyte(cs, i)
    if x == y then
      same = same + 2
    else
      if bit.rshift(x, 4) == bit.rshift(y, 4) then
        same = same + 1
      end
      if band(x, 15) == band(y, 15) then
        same = same + 1
      end
    end
  end
  local r = 1.0 / 16
  local j = (same / (2 * (SK_MIN_END - SK_MIN + 1)) - r) / (1 - r)
  if j < 0 then
    j = 0
  end
  if wide and j * 100 < t_lsh then
    return false
  end
  local na = unpack('>H', qs)
  local nb = unpack('>H', cs)
  local small = math.min(na, nb)
  if small == 0 then
    return false
  end
  local c = j * (na + nb) / (1 + j) / small
  if c > 1 then
    c = 1
  end
  if c * 100 < t_text then
    return false
  end
  local bits_a, bits_b, both = 0, 0, 0
  for i = SK_NUM, SK_NUM_END do
    local x, y = sbyte(qs, i), sbyte(cs, i)
    bits_a = bits_a + popcount8(x)
    bits_b = bits_b + popcount8(y)
    both = both + popcount8(band(x, y))
  end
  local small_n = math.min(bits_a, bits_b)
  if small_n > 0 and both * 100 < t_num * small_n then
    return false
  end
  if t_chance < 0 then
    return true
  end
  -- the chance of the evidence between distinct texts (sketch.py, text_chance * number_chance):
  -- `same` bins or more when only t_support % of the smaller text's 4-grams are in the other...
  local big = math.max(na, nb)
  local j0 = t_support * small / (100 * (small + big) - t_support * small)
  local p = r + (1 - r) * j0
  local q = 1.0 - p
  local n = 2 * (SK_MIN_END - SK_MIN + 1)
  local term = 1.0
  for _ = 1, n do
    term = term * q
  end
  local chance = 0.0
  for i = 0, n do
    if i >= same then
      chance = chance + term
    end
    term = term * (n - i) / (i + 1) * p / q
  end
  -- ... times the chance that the smaller number set falls inside the larger by accident
  local fill = math.max(bits_a, bits_b) / (8 * (SK_NUM_END - SK_NUM + 1))
  local nchance = 1.0
  for _ = 1, small_n do
    nchance = nchance * fill
  end
  return chance * nchance * 1000000 <= t_chance
end

-- A candidate within maxd: exact distance, then its block-0 record "<day>:<doc id>" (the doc id
-- of a match, and with retention its age), into `matches`. Only such candidates have their age
-- read: with retention, an expired one is treated as absent (and deleted by check_add); expired
-- entries that are not near are left to prune() (newscrawl/index/lua/prune.lua).
local function consider(i, f, limit)
  -- exact Hamming distance, counted on two 32-bit halves, stopping at limit + 1 (limit: maxd,
  -- or 64 for a candidate from a band bucket)
  limit = limit or maxd
  local hi, lo = unpack('>I4I4', f)
  local dist = 0
  local x = bxor(hi, qhi)
  while x ~= 0 and dist <= limit do
    x = band(x, x - 1)
    dist = dist + 1
  end
  x = bxor(lo, qlo)
  while x ~= 0 and dist <= limit do
    x = band(x, x - 1)
    dist = dist + 1
  end
  if dist > limit then
    return
  end
  if qs then
    if seen_any[f] then
      return
    end
    seen_any[f] = true
  end
  local a1, a2, a3, a4 = unpack('>HHHH', f)
  local v0
  if i == 1 then
    v0 = redis.call('HGET', KEYS[2], rest(f, 0))
  else
    v0 = redis.call('HGET', bucket_key(0, a1), rest(f, 0))
  end
  if not v0 then
    -- orphan (its block-0 record is gone): clean it up
    if writing then
      delete_entry(f, false)
      if i == 6 or i == 7 then
        redis.call('HDEL', KEYS[i], f)
      end
    end
    return
  end
  -- each record (one per doc stored with this fingerprint); check_add's match is the first one
  -- that confirms the query, a query's matches are all of them (several copies of one text).
  -- Unreadable and (with retention) expired records are dropped by check_add.
  local all = split_records(v0)
  local keep = {}
  local found
  local hex = string.format('%04x%04x%04x%04x', a1, a2, a3, a4)
  for _, r in ipairs(all) do
    local day, docid, cs = parse_record(r)
    if docid ~= nil and not (retention and tonumber(day) < min_day) then
      keep[#keep + 1] = r
      if not found or not writing then
        local ok
        if qs and cs then
          -- both texts have a sketch: a match only if the sketches confirm it
          ok = confirm(cs, dist > maxd)
        else
          ok = dist <= maxd
        end
        if ok then
          found = docid
          matches[#matches + 1] = {dist, hex, docid, #matches}
        end
      end
    end
  end
  if writing and #keep < #all then
    keep_records(f, all, keep)
    if #keep == 0 and (i == 6 or i == 7) then
      redis.call('HDEL', KEYS[i], f)
    end
  end

end

-- max distance 4-7 (multi-probe): the four buckets cannot find these (distance 4 can put one
-- differing bit in each block), but a distance <= 7 leaves at least one block with at most one
-- differing bit (four blocks with two or more would make eight). So each block's bucket and its
-- 16 one-bit neighbours are read: 68 buckets, about 17 times the candidates of the 4-bucket scan.
-- A fingerprint found in several of them is considered once.
if maxd >= 4 then
  local lshift = bit.lshift
  local blocks = {unpack('>HHHH', fp)}
  local seen = {}
  -- bits set in a byte, so a candidate's distance is eight lookups (about 1,100 candidates per
  -- call at 1M stored fingerprints; only those within maxd go on to consider())
  local pc = {[0] = 0}
  for v = 1, 255 do
    pc[v] = pc[band(v, v - 1)] + 1
  end
  for b = 0, 3 do
    local value = blocks[b + 1]
    -- the query's bytes outside block b, in the order of a field of that block's hashes
    local q1, q2, q3, q4, q5, q6 = sbyte(rest(fp, b), 1, 6)
    local qh, ql = sbyte(fp, 2 * b + 1, 2 * b + 2)
    for k = -1, 15 do
      local entries
      local bv = value
      if k >= 0 then
        bv = bxor(value, lshift(1, k))
      end
      -- bits that differ in block b itself, the same for every entry of this bucket
      local d0 = pc[bxor(bit.rshift(bv, 8), qh)] + pc[bxor(band(bv, 255), ql)]
      if k < 0 then
        entries = redis.call('HKEYS', KEYS[b + 2])
      else
        -- pcall: a foreign key of another type under a neighbour's bucket name is skipped (as
        -- prune.lua and delete_entry do), not an error for every fingerprint near it
        entries = redis.pcall('HKEYS', bucket_key(b, bxor(value, lshift(1, k))))
        if entries.err then
          entries = {}
        end
      end
      local mid = string.char(bit.rshift(bv, 8), band(bv, 255))
      for j = 1, #entries do
        local e = entries[j]
        if #e == 6 then
          local c1, c2, c3, c4, c5, c6 = sbyte(e, 1, 6)
          local d = d0 + pc[bxor(c1, q1)] + pc[bxor(c2, q2)] + pc[bxor(c3, q3)]
          if d <= maxd then
            d = d + pc[bxor(c4, q4)] + pc[bxor(c5, q5)] + pc[bxor(c6, q6)]
            if d <= maxd then
              local f = string.sub(e, 1, 2 * b) .. mid .. string.sub(e, 2 * b + 1)
              if not seen[f] then
                seen[f] = true
                consider(0, f)
              end
            end
          end
        end
      end
    end
  end
else
  -- One loop per bucket, so each tests only what it must: bucket i holds fingerprints whose
  -- block i equals the query's, so only the other six bytes are compared (at most maxd of them
  -- may differ), and a fingerprint sharing an earlier block was handled in that bucket already.
  -- The buckets' fields are fetched alone (HKEYS), with or without retention: a value is read
  -- (HGET of the block-0 record) only for a candidate within maxd.
  -- A field of block b's hash is the fingerprint without block b (six bytes); the whole
  -- fingerprint is put together only for a candidate.
  local fb0, fb1, fb2, fb3 = string.sub(fp, 1, 2), string.sub(fp, 3, 4), string.sub(fp, 5, 6),
    string.sub(fp, 7, 8)
  local entries = redis.call('HKEYS', KEYS[2])
  for j = 1, #entries do
    local e = entries[j]
    if #e == 6 then
      local c3, c4, c5, c6, c7, c8 = sbyte(e, 1, 6)
      local d = 0
      if c3 ~= p3 then d = d + 1 end
      if c4 ~= p4 then d = d + 1 end
      if c5 ~= p5 then d = d + 1 end
      if c6 ~= p6 then d = d + 1 end
      if c7 ~= p7 then d = d + 1 end
      if c8 ~= p8 then d = d + 1 end
      if d <= maxd then
        consider(1, fb0 .. e)
      end
    end
  end
  entries = redis.call('HKEYS', KEYS[3])
  for j = 1, #entries do
    local e = entries[j]
    if #e == 6 then
      local c1, c2, c5, c6, c7, c8 = sbyte(e, 1, 6)
      if c1 ~= p1 or c2 ~= p2 then
        local d = 0
        if c1 ~= p1 then d = d + 1 end
        if c2 ~= p2 then d = d + 1 end
        if c5 ~= p5 then d = d + 1 end
        if c6 ~= p6 then d = d + 1 end
        if c7 ~= p7 then d = d + 1 end
        if c8 ~= p8 then d = d + 1 end
        if d <= maxd then
          consider(2, string.sub(e, 1, 2) .. fb1 .. string.sub(e, 3))
        end
      end
    end
  end
  entries = redis.call('HKEYS', KEYS[4])
  for j = 1, #entries do
    local e = entries[j]
    if #e == 6 then
      local c1, c2, c3, c4, c7, c8 = sbyte(e, 1, 6)
      if (c1 ~= p1 or c2 ~= p2) and (c3 ~= p3 or c4 ~= p4) then
        local d = 0
        if c1 ~= p1 then d = d + 1 end
        if c2 ~= p2 then d = d + 1 end
        if c3 ~= p3 then d = d + 1 end
        if c4 ~= p4 then d = d + 1 end
        if c7 ~= p7 then d = d + 1 end
        if c8 ~= p8 then d = d + 1 end
        if d <= maxd then
          consider(3, string.sub(e, 1, 4) .. fb2 .. string.sub(e, 5))
        end
      end
    end
  end
  entries = redis.call('HKEYS', KEYS[5])
  for j = 1, #entries do
    local e = entries[j]
    if #e == 6 then
      local c1, c2, c3, c4, c5, c6 = sbyte(e, 1, 6)
      if (c1 ~= p1 or c2 ~= p2) and (c3 ~= p3 or c4 ~= p4) and (c5 ~= p5 or c6 ~= p6) then
        local d = 0
        if c1 ~= p1 then d = d + 1 end
        if c2 ~= p2 then d = d + 1 end
        if c3 ~= p3 then d = d + 1 end
        if c4 ~= p4 then d = d + 1 end
        if c5 ~= p5 then d = d + 1 end
        if c6 ~= p6 then d = d + 1 end
        if d <= maxd then
          consider(4, e .. fb3)
        end
      end
    end
  end
end

-- Candidates found by the text sketch: the fingerprints in the query's two minhash band buckets
-- whose stored 4-bit value of that band's bin equals the query's (a one-in-16 check before the
-- record is read), at any Hamming distance; they are matches only if their sketches confirm it.
if qs then
  local first = sbyte(qs, SK_MIN)
  local checks = {tostring(bit.rshift(first, 4)), tostring(band(first, 15))}
  for k = 6, 7 do
    local check = checks[k - 5]
    local entries = redis.call('HGETALL', KEYS[k])
    for j = 1, #entries, 2 do
      local f = entries[j]
      local c = entries[j + 1]
      if (c == check or c == '*') and #f == 8 and not seen_any[f] then
        consider(k, f, 64)
      end
    end
  end
end

table.sort(matches, function(x, y)
  if x[1] ~= y[1] then
    return x[1] < y[1]
  end
  if x[2] ~= y[2] then
    return x[2] < y[2]
  end
  return x[4] < y[4] -- docs sharing a fingerprint: in the order of their records
end)

if writing then
  if #matches > 0 then
    return {matches[1][1], matches[1][2], matches[1][3]}
  end
  add_entry()
  return {}
end

local out = {}
for _, m in ipairs(matches) do
  table.insert(out, m[1])
  table.insert(out, m[2])
  table.insert(out, m[3])
end
return out
