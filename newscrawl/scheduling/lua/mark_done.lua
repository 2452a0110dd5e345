-- KEYS: seen shard...   ARGV: day, member... (one per shard)
for i = 1, #KEYS do redis.call('ZADD', KEYS[i], 'GT', ARGV[1], ARGV[i + 1]) end
return #KEYS
