"""The tier job's Lua scripts: every write it makes is fenced by its lease.

A replica that paused past its lease's expiry finds another holder's id in the lease key, so its
scripts change nothing (they answer -1), and it cannot prune or overwrite a newer snapshot.
"""

from __future__ import annotations

from typing import Final

NOT_HOLDER: Final = -1
"""What a fenced script answers when the lease is not (or no longer) ours."""

LEASE_ACQUIRE: Final = """
-- KEYS[1] lease; ARGV[1] holder id, ARGV[2] ttl (ms).  1: ours now (taken or extended), 0: not.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
"""

LEASE_RELEASE: Final = """
-- KEYS[1] lease; ARGV[1] holder id.  1: released, 0: it was not ours.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
"""

PRUNE_STEP: Final = """
-- KEYS: lease, activity, active_mu, pruned_to.  ARGV: holder, cutoff (ms), chunk.
-- Removes from active_mu the players whose activity time is in (pruned_to, upto], where upto is
-- the cutoff or, when more than `chunk` players expired, the chunk-th one's time (ties included),
-- and records upto.  Answers {removed, scanned, upto, done}.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return {-1, 0, '', 1}
end
local cutoff = ARGV[2]
local last = redis.call('GET', KEYS[4])
local low = '-inf'
if last then
  if tonumber(last) >= tonumber(cutoff) then
    return {0, 0, last, 1}
  end
  low = '(' .. last
end
local upto, done = cutoff, 1
local probe = redis.call('ZRANGEBYSCORE', KEYS[2], low, cutoff, 'WITHSCORES',
                         'LIMIT', tonumber(ARGV[3]) - 1, 1)
if #probe > 0 and tonumber(probe[2]) < tonumber(cutoff) then
  upto, done = probe[2], 0
end
local expired = redis.call('ZRANGEBYSCORE', KEYS[2], low, upto)
local removed = 0
for i = 1, #expired, 1000 do
  removed = removed + redis.call('ZREM', KEYS[3], unpack(expired, i, math.min(i + 999, #expired)))
end
redis.call('SET', KEYS[4], upto)
return {removed, #expired, upto, done}
"""

DROP_INACTIVE: Final = """
-- KEYS: lease, activity, active_mu.  ARGV: holder, cutoff (ms), player ids...
-- Removes from active_mu each given player that is not active at the cutoff (checked here, so a
-- player the consumer re-activated in the meantime stays).  Answers how many it removed.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local cutoff = tonumber(ARGV[2])
local removed = 0
for i = 3, #ARGV do
  local t = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if (not t) or tonumber(t) <= cutoff then
    removed = removed + redis.call('ZREM', KEYS[3], ARGV[i])
  end
end
return removed
"""

ADD_ACTIVE: Final = """
-- KEYS: lease, activity, active_mu.  ARGV: holder, cutoff (ms), player key prefix, player ids...
-- Adds to active_mu, with the μ of its hash, each given player still active at the cutoff.
-- Answers the flat list id, mu of the players it added (-1 if the lease is not ours).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local cutoff = tonumber(ARGV[2])
local added = {}
for i = 4, #ARGV do
  local t = redis.call('ZSCORE', KEYS[2], ARGV[i])
  if t and tonumber(t) > cutoff then
    local mu = redis.call('HGET', ARGV[3] .. ARGV[i], 'mu')
    if mu then
      redis.call('ZADD', KEYS[3], mu, ARGV[i])
      added[#added + 1] = ARGV[i]
      added[#added + 1] = mu
    end
  end
end
return added
"""

PUBLISH: Final = """
-- KEYS: lease, snapshot.  ARGV: holder, previous version (0: none), computed_at, active_count,
-- mean_mu_active, boundaries.  Writes version = previous + 1 if the lease is ours and nobody
-- published since we read the previous snapshot.  Answers the new version, -1 (not holder) or
-- -2 (the snapshot moved on).
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return -1
end
local current = tonumber(redis.call('HGET', KEYS[2], 'version') or '0')
if current ~= tonumber(ARGV[2]) then
  return -2
end
local version = current + 1
redis.call('HSET', KEYS[2], 'version', version, 'computed_at', ARGV[3],
           'active_count', ARGV[4], 'mean_mu_active', ARGV[5], 'boundaries', ARGV[6])
return version
"""

SNAPSHOT_MOVED_ON: Final = -2
