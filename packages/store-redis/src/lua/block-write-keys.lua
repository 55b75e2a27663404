-- Writes a block that ends at `blocked_until` (block-reply.lua, keys of their own): its key expires
-- with it, plus the margin.
redis.call('SET', KEYS[3], struct.pack('<d', blocked_until), 'PX', math.ceil(BLOCK_MS) + margin)
