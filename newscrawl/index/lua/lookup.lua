-- The near-duplicate search shared by check_add.lua and query.lua (after lib.lua): the
-- candidates of fingerprint fp in its four block buckets (max distance 0-3), or those and their
-- one-bit neighbours (4-7), and with a sketch its two band buckets; a candidate stored with a
-- sketch matches only if the sketches confirm it (newscrawl/simhash/sketch.py, confirms()).
-- Design and measurements: docs/design/index.md.

-- Confirmation thresholds packed in one argument: "text numbers wide support chance".
local function thresholds(packed)
  local t = {}
  for w in string.gmatch(packed or '', '%S+') do
    t[#t + 1] = tonumber(w)
  end
  return t[1] or 0, t[2] or 0, t[3] or 0, t[4] or 0, t[5] or -1
end

-- The stored docs near fp: {distance, fingerprint hex, doc id, order}, nearest first. maxd: the
-- max Hamming distance; min_day: the oldest day still compared (-1: no retention); qs: the text
-- sketch or nil; packed: its thresholds. `writing` (check_add): an expired or unreadable record
-- found is deleted, an orphan entry cleaned up, and only the first confirming record of each
-- candidate is kept.
local function lookup(fp, maxd, min_day, qs, packed, writing)
  local t_text, t_num, t_lsh, t_support, t_chance = thresholds(packed)
  -- max distance 0-3: scan the four buckets. A stored fingerprint sharing several blocks with the
  -- query sits in several of them: it is handled in the first (lowest) block it shares, skipped in
  -- the others. The loops are the hot path (4 * n / 65536 candidates per call), so they
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
  -- 16 one-bit neighbours are read: 68 buckets (docs/design/index.md#max_distance-4-7-neighbour-
  -- buckets). A fingerprint found in several of them is considered once.
  if maxd >= 4 then
    local lshift = bit.lshift
    local blocks = {unpack('>HHHH', fp)}
    local seen = {}
    -- bits set in a byte, so a candidate's distance is eight lookups (only those within maxd go
    -- on to consider())
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

  return matches
end
