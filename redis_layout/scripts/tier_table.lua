-- KEYS: tier_counts, pop.  Read-only (EVAL_RO): the leaderboard reader's "tiers", the placed
-- players per tier label and the tracked count P from one state: {{label, n, ...}, P or false}.
return {redis.call('HGETALL', KEYS[1]), redis.call('HGET', KEYS[2], 'count')}
