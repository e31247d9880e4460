-- KEYS: a player's history list.  ARGV: the most points to keep, then the player's new points
-- (redis_layout/history_codec.py: JSON arrays that start `[epoch,seq,`) in the order they came.
-- Appends each point whose (epoch, seq) is above the list's last, so a redelivered change (at or
-- below it) changes nothing. A point of a newer epoch first drops the points of older epochs
-- at or above its seq: the pool lost those changes and applies the events again, as this one
-- (schemas/rating_change.md). Then trims the list to the newest points. Answers how many it
-- appended.
local function order(point)
  local epoch, seq = string.match(point, '^%[(%d+),(%d+),')
  return tonumber(epoch), tonumber(seq)
end
local last = redis.call('LINDEX', KEYS[1], -1)
local last_epoch, last_seq = -1, -1
if last then last_epoch, last_seq = order(last) end
local added = 0
for i = 2, #ARGV do
  local epoch, seq = order(ARGV[i])
  if epoch > last_epoch or (epoch == last_epoch and seq > last_seq) then
    if epoch > last_epoch then
      while true do
        local tail = redis.call('LINDEX', KEYS[1], -1)
        if not tail then break end
        local tail_epoch, tail_seq = order(tail)
        if tail_epoch >= epoch or tail_seq < seq then break end
        redis.call('RPOP', KEYS[1])
      end
    end
    redis.call('RPUSH', KEYS[1], ARGV[i])
    last_epoch, last_seq = epoch, seq
    added = added + 1
  end
end
redis.call('LTRIM', KEYS[1], -tonumber(ARGV[1]), -1)
return added
