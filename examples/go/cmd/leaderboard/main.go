// Command leaderboard reads adr-stream's leaderboards from Redis (docs/leaderboards.md) and
// prints JSON: the shapes of `adr leaderboard --json`.
//
//	leaderboard top N            the N best placed players
//	leaderboard rank PLAYER      rank (null while unplaced), mu and tier of one player
//	leaderboard around PLAYER K  the placed players within K ranks of PLAYER
//	leaderboard tier PLAYER      a player's tier label (null while unplaced)
//	leaderboard friends ID...    the placed ones among ids, best first (ZMSCORE)
//
// $REDIS_URL (default redis://127.0.0.1:6379/0), $ADR_NAMESPACE (default adr). Exit status 0;
// 1 for an unknown player (rank, tier) or Redis unreachable; 2 for usage.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Entry is one player on the board; Rank and Tier are nil while the player is unplaced.
type Entry struct {
	Rank   *int64  `json:"rank"`
	Player string  `json:"player"`
	Mu     float64 `json:"mu"`
	Tier   *string `json:"tier"`
}

// Board reads one namespace. Every key is "{NS}:..." (the braces are a Cluster hash tag).
type Board struct {
	rdb *redis.Client
	ns  string
}

func (b Board) lb() string              { return "{" + b.ns + "}:lb" }
func (b Board) player(id string) string { return "{" + b.ns + "}:player:" + id }
func textOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
func rankFrom0(r int64) *int64 { r++; return &r }

// around runs ZREVRANK and ZREVRANGE in one script, so no consumer batch lands in between.
var around = redis.NewScript(`
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local lo = math.max(0, r - tonumber(ARGV[2]))
return {lo, redis.call('ZREVRANGE', KEYS[1], lo, r + tonumber(ARGV[2]), 'WITHSCORES')}`)

// entries adds each member's tier (one pipelined HGET each) to ranked (member, score) pairs.
func (b Board) entries(ctx context.Context, firstRank int64, zs []redis.Z) ([]Entry, error) {
	pipe := b.rdb.Pipeline()
	tiers := make([]*redis.StringCmd, len(zs))
	for i, z := range zs {
		tiers[i] = pipe.HGet(ctx, b.player(z.Member.(string)), "tier")
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]Entry, len(zs))
	for i, z := range zs {
		rank := firstRank + int64(i)
		out[i] = Entry{Rank: &rank, Player: z.Member.(string), Mu: z.Score, Tier: textOrNil(tiers[i].Val())}
	}
	return out, nil
}

// Top returns the n best placed players: ZREVRANGE lb 0 n-1 WITHSCORES.
func (b Board) Top(ctx context.Context, n int64) ([]Entry, error) {
	zs, err := b.rdb.ZRevRangeWithScores(ctx, b.lb(), 0, n-1).Result()
	if err != nil {
		return nil, err
	}
	return b.entries(ctx, 1, zs)
}

// Rank returns one player's entry (nil if the player has no hash): ZREVRANK and HMGET in one
// MULTI/EXEC, so rank and hash come from the same state.
func (b Board) Rank(ctx context.Context, id string) (*Entry, error) {
	var rank *redis.IntCmd
	var fields *redis.SliceCmd
	_, err := b.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		rank = p.ZRevRank(ctx, b.lb(), id)
		fields = p.HMGet(ctx, b.player(id), "mu", "tier")
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	values := fields.Val()
	if values[0] == nil {
		return nil, nil
	}
	// mu is stored as Python's repr of the double: ParseFloat gives the exact value back.
	mu, err := strconv.ParseFloat(values[0].(string), 64)
	if err != nil {
		return nil, err
	}
	tier, _ := values[1].(string) // nil if the hash has no tier field
	e := Entry{Player: id, Mu: mu, Tier: textOrNil(tier)}
	if r, err := rank.Result(); err == nil {
		e.Rank = rankFrom0(r)
	}
	return &e, nil
}

// Around returns the placed players within k ranks of id (empty if id is unplaced).
func (b Board) Around(ctx context.Context, id string, k int64) ([]Entry, error) {
	reply, err := around.Run(ctx, b.rdb, []string{b.lb()}, id, k).Slice()
	if errors.Is(err, redis.Nil) {
		return []Entry{}, nil
	}
	if err != nil {
		return nil, err
	}
	flat := reply[1].([]interface{})
	zs := make([]redis.Z, 0, len(flat)/2)
	for i := 0; i+1 < len(flat); i += 2 {
		score, err := strconv.ParseFloat(flat[i+1].(string), 64)
		if err != nil {
			return nil, err
		}
		zs = append(zs, redis.Z{Member: flat[i].(string), Score: score})
	}
	return b.entries(ctx, reply[0].(int64)+1, zs)
}

// Tier returns a player's tier label ("" while unplaced); redis.Nil for an unknown player.
func (b Board) Tier(ctx context.Context, id string) (string, error) {
	return b.rdb.HGet(ctx, b.player(id), "tier").Result()
}

// Friends returns the placed players among ids, best first (ties: by id descending, as
// ZREVRANGE orders them), with their tiers; Rank is the position among them. ZMSCORE is sent raw: go-redis's
// ZMScore turns a missing member's nil into 0, which cannot be told from a real score.
func (b Board) Friends(ctx context.Context, ids []string) ([]Entry, error) {
	args := []interface{}{"ZMSCORE", b.lb()}
	for _, id := range ids {
		args = append(args, id)
	}
	scores, err := b.rdb.Do(ctx, args...).Slice()
	if err != nil {
		return nil, err
	}
	zs := []redis.Z{}
	seen := map[string]bool{}
	for i, s := range scores {
		if s == nil || seen[ids[i]] {
			continue // not placed (or listed twice)
		}
		seen[ids[i]] = true
		var mu float64
		switch v := s.(type) {
		case string: // RESP2
			if mu, err = strconv.ParseFloat(v, 64); err != nil {
				return nil, err
			}
		case float64: // RESP3
			mu = v
		}
		zs = append(zs, redis.Z{Member: ids[i], Score: mu})
	}
	sort.Slice(zs, func(i, j int) bool {
		if zs[i].Score != zs[j].Score {
			return zs[i].Score > zs[j].Score
		}
		return zs[i].Member.(string) > zs[j].Member.(string)
	})
	return b.entries(ctx, 1, zs)
}

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func main() { os.Exit(run(os.Args[1:])) }

func run(args []string) int {
	usage := func() int {
		fmt.Fprintln(os.Stderr, "usage: leaderboard top N | rank PLAYER | around PLAYER K | tier PLAYER | friends ID...")
		return 2
	}
	if len(args) < 2 {
		return usage()
	}
	opts, err := redis.ParseURL(env("REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "leaderboard:", err)
		return 2
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	b := Board{rdb: rdb, ns: env("ADR_NAMESPACE", "adr")}
	ctx := context.Background()
	var result interface{}
	switch args[0] {
	case "top":
		n, perr := strconv.ParseInt(args[1], 10, 64)
		if perr != nil || n < 1 {
			return usage()
		}
		result, err = b.Top(ctx, n)
	case "rank":
		var e *Entry
		if e, err = b.Rank(ctx, args[1]); err == nil && e == nil {
			fmt.Fprintf(os.Stderr, "leaderboard: no player %q\n", args[1])
			return 1
		}
		result = e
	case "around":
		if len(args) != 3 {
			return usage()
		}
		k, perr := strconv.ParseInt(args[2], 10, 64)
		if perr != nil || k < 0 {
			return usage()
		}
		result, err = b.Around(ctx, args[1], k)
	case "tier":
		tier, terr := b.Tier(ctx, args[1])
		if errors.Is(terr, redis.Nil) {
			fmt.Fprintf(os.Stderr, "leaderboard: no player %q\n", args[1])
			return 1
		}
		result, err = map[string]interface{}{"player": args[1], "tier": textOrNil(tier)}, terr
	case "friends":
		result, err = b.Friends(ctx, args[1:])
	default:
		return usage()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "leaderboard:", err)
		return 1
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
	return 0
}
