-- The index's shared Lua, prepended to each of its scripts: the bucket record format, bucket
-- keys and the writes that add or delete a fingerprint. The constants are checked against
-- Python at load (newscrawl/index/scripts.py). Layout: docs/design/index.md.
local SKETCH_BYTES = 34
-- the sketch's number set and minhash bins (1-based byte positions; newscrawl/simhash/sketch.py)
local SK_NUM = 7
local SK_NUM_END = 18
local SK_MIN = 19
local SK_MIN_END = 34
-- band entries live in the hashes of these blocks, told apart by their 8-byte fields
local BAND0_BLOCK = 2
local BAND1_BLOCK = 3
-- a record with a sketch keeps its day in two bytes (1970-01-01 to 2149-06-06)
local MAX_DAY = 65535
-- the doc id prefix a record with a sketch leaves out, by its code byte (1-5)
local DOC_PREFIXES = {'', 'https://', 'http://', 'https://www.', 'http://www.'}
local INCOMPATIBLE = 'NEWSCRAWL_INCOMPATIBLE_INDEX'
local LOST = 'NEWSCRAWL_INDEX_LOST'

-- every index script: KEYS[1] the meta hash, ARGV[1] the bucket key format
-- (e.g. 'newscrawl:simhash:%d:%04x', from newscrawl/keys.py)
local meta = KEYS[1]
local bucket_format = ARGV[1]

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

-- An error reply for a fingerprint that is not 8 bytes (never a Lua number: Lua numbers are
-- doubles) or a sketch that is not SKETCH_BYTES bytes with its two band keys (KEYS[6-7]).
local function bad_input(fp, qs)
  if string.len(fp) ~= 8 then
    return redis.error_reply('NEWSCRAWL_BAD_FINGERPRINT expected 8 bytes')
  end
  if qs and (string.len(qs) ~= SKETCH_BYTES or #KEYS < 7) then
    return redis.error_reply('NEWSCRAWL_BAD_SKETCH expected ' .. SKETCH_BYTES .. ' bytes and 7 keys')
  end
  return nil
end

-- An error reply for a day a record with a sketch cannot keep.
local function bad_day(today, qs)
  if qs and (today < 0 or today > MAX_DAY) then
    return redis.error_reply('NEWSCRAWL_BAD_DAY ' .. today .. ' outside 0-' .. MAX_DAY)
  end
  return nil
end

-- The index's version check: an error reply when the meta hash names another version; a
-- writing script records the version on its first write.
local function version_error(version, writing)
  if version == '' then
    return nil
  end
  local stored = redis.call('HGET', meta, 'version')
  if stored then
    if stored ~= version then
      return redis.error_reply(INCOMPATIBLE .. ' ' .. stored)
    end
  elseif writing then
    redis.call('HSET', meta, 'version', version)
  end
  return nil
end

-- An error reply when the index is not the one the caller opened: its meta hash's 'created'
-- (set with its first fingerprint, kept while the hash lasts) differs from ``expected``
-- ("" = not checked), as after Redis lost its data (a restart without persistence, a flush).
local function lost_error(expected)
  if expected == nil or expected == '' then
    return nil
  end
  local created = redis.call('HGET', meta, 'created')
  if created ~= expected then
    return redis.error_reply(LOST .. ' ' .. (created or ''))
  end
  return nil
end

-- A script's sketch argument: nil for "" (a fingerprint stored or looked up without a sketch).
local function sketch_arg(value)
  if value == '' then
    return nil
  end
  return value
end

-- The error reply a writing script (add, check_add) returns before it writes, or nil.
local function write_refused(fp, today, version, qs)
  return bad_input(fp, qs) or bad_day(today, qs) or version_error(version, true)
end

-- A block-0 record: day, doc id, sketch (nil when stored without one); nil when unreadable.
-- With a sketch: <code byte 1-5><day, 2 bytes big-endian><sketch><doc id without the prefix the
-- code names>; without: "<day>:<doc id>".
local function parse_record(v)
  local code = string.byte(v, 1)
  local prefix = code and DOC_PREFIXES[code]
  if prefix then
    if #v < 3 + SKETCH_BYTES then
      return nil
    end
    local day = struct.unpack('>H', string.sub(v, 2, 3))
    return day, prefix .. string.sub(v, 4 + SKETCH_BYTES), string.sub(v, 4, 3 + SKETCH_BYTES)
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

-- Store fingerprint fp (KEYS[2-5] its block buckets, KEYS[6-7] its sketch's band buckets) for
-- doc on day today, with sketch qs (nil: none). A record of the same doc id is replaced; other
-- docs' records of fp stay. Returns 1 if fp is new, else 0.
local function add_entry(fp, doc, today, now, qs)
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

-- Delete the entries of fingerprint f whose block-0 value is `value` (nil: read it): its band
-- entries and its four block entries, without touching the count. Returns 1 if its block-0
-- entry was there (key0: its block-0 bucket, nil: named by the format). pcall: a foreign
-- non-hash key under a bucket name must not abort a script between deletions (Redis does not
-- roll back what was done).
local function drop_fingerprint(f, value, key0)
  local c1, c2, c3, c4 = struct.unpack('>HHHH', f)
  key0 = key0 or bucket_key(0, c1)
  if value == nil then
    local v = redis.pcall('HGET', key0, rest(f, 0))
    if type(v) == 'string' then
      value = v
    end
  end
  if value then
    for _, r in ipairs(split_records(value)) do
      local b0, b1 = bands_of(r)
      if b0 then
        redis.pcall('HDEL', bucket_key(BAND0_BLOCK, b0), f)
        redis.pcall('HDEL', bucket_key(BAND1_BLOCK, b1), f)
      end
    end
  end
  local removed = redis.pcall('HDEL', key0, rest(f, 0))
  redis.pcall('HDEL', bucket_key(1, c2), rest(f, 1))
  redis.pcall('HDEL', bucket_key(2, c3), rest(f, 2))
  redis.pcall('HDEL', bucket_key(3, c4), rest(f, 3))
  if removed == 1 then
    return 1
  end
  return 0
end

-- drop_fingerprint, and the meta count with it.
local function delete_entry(f, value)
  local removed = drop_fingerprint(f, value)
  if removed == 1 then
    redis.call('HINCRBY', meta, 'count', -1)
  end
  return removed
end

-- Delete the band entries of f that records `gone` use and no record of `keep` does.
local function drop_bands(f, gone, keep)
  local used0, used1 = {}, {}
  for _, r in ipairs(keep) do
    local b0, b1 = bands_of(r)
    if b0 then
      used0[b0], used1[b1] = true, true
    end
  end
  for _, r in ipairs(gone) do
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
  for _, r in ipairs(keep) do
    local b0, b1, k0, k1 = bands_of(r)
    if b0 then
      redis.pcall('HSET', bucket_key(BAND0_BLOCK, b0), f, k0)
      redis.pcall('HSET', bucket_key(BAND1_BLOCK, b1), f, k1)
    end
  end
  drop_bands(f, all, keep)
  return 0
end
