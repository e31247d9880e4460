// Command leaderboard reads adr-stream's leaderboards from Redis (docs/leaderboards.md) and
// prints JSON: the shapes of `adr leaderboard --json`.
//
//	leaderboard top N            the N best placed players
//	leaderboard rank PLAYER      rank (null while unplaced), mu and tier of one player
//	leaderboard around PLAYER K  the placed players within K ranks of PLAYER
//	leaderboard tier PLAYER      a player's tier label (null while unplaced)
//	leaderboard friends ID...    the placed ones among ids, best first (ZMSCORE)
//
// $REDIS_URL (default redis://127.0.0.1:6379/0), $ADR_NAMESPACE (default adr). Every read works
// for the read-only ACL user of deploy/redis/acl-users.acl: read commands and read-only scripts
// (EVALSHA_RO, EVAL_RO), no MULTI. It first reads the pool's layout version ({NS}:layout) and
// rating model ({NS}:model) in one MGET; "mu" is the rating ranks use, the model's display
// rating (docs/leaderboards.md, "What a reader sees for each model").
//
// Exit status, as docs/leaderboards.md's table says for every reader: 0 found; 1 an unknown
// player (rank, tier, around) or an unplaced one (around); 2 usage; 3 Redis unreachable or an
// error, or a rating model (or a model's parameter) this reader does not know; 4 permission
// denied (NOPERM, a wrong user or password); 5 a layout version this reader does not know.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"

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
// Open it (CheckPool) before a query: the rank query needs the pool's model.
type Board struct {
	rdb   *redis.Client
	ns    string
	model Model
}

func (b Board) lb() string              { return "{" + b.ns + "}:lb" }
func (b Board) layout() string          { return "{" + b.ns + "}:layout" }
func (b Board) modelKey() string        { return "{" + b.ns + "}:model" }
func (b Board) player(id string) string { return "{" + b.ns + "}:player:" + id }

// Exit statuses: docs/leaderboards.md, "Exit status".
const (
	exitFound    = 0
	exitNotFound = 1
	exitUsage    = 2
	exitRedis    = 3
	exitDenied   = 4
	exitLayout   = 5
)

// layoutVersions are the {NS}:layout values this reader knows; an absent key reads as layout 2
// (written before the key existed, docs/leaderboards.md, "Compatibility").
var layoutVersions = map[string]bool{"2": true}

// errUnknownLayout: {NS}:layout names a layout this reader does not know.
var errUnknownLayout = errors.New("unknown layout")

// Model is a pool's rating model as {NS}:model records it (docs/leaderboards.md, "What a reader
// sees for each model"): the rating ranks use is mu for adr and elo, mu - k*sigma for glicko2
// (r - k*RD), trueskill and weng-lin, k the model's display_k.
type Model struct {
	Name     string
	DisplayK float64
}

// Display is the rating ranks use, from the player hash's mu and sigma. float64(k*sigma): Go
// may fuse a*b+c into one rounding on some CPUs; the pool's display rating rounds twice.
func (m Model) Display(mu, sigma float64) float64 {
	if m.Name == "adr" || m.Name == "elo" {
		return mu
	}
	return mu - float64(m.DisplayK*sigma)
}

// usesSigma: the models whose display rating is mu - display_k*sigma (display_k: the stamp's, or
// its default in modelParameters).
var usesSigma = map[string]bool{"glicko2": true, "trueskill": true, "weng-lin": true}

// modelParameters: the parameters of each model other than adr, in its config's order
// (engine/_elo.py, _glicko2.py, _trueskill.py, _weng_lin.py), each with the values the engine
// takes for it: "KIND DEFAULT [RULE...]". KIND: number (a finite JSON number), integer (one with
// no fraction) or name (a JSON string); DEFAULT: what a stamp without the parameter means; RULE:
// OP OPERAND (OP >, >=, <=; OPERAND a number or another parameter of the model, its value given
// or default), or for a name the names it may be (a|b|c). A stamp with another name is a newer
// release's model, whose display rating this reader may compute wrong; one with a value the
// engine refuses is no pool a consumer writes: both refused, as `adr leaderboard` refuses them
// (docs/leaderboards.md, "Exit status"). tests/examples/test_readers_model_rules.py checks the
// table against the engine: names, kinds and defaults, and a grid of values the engine and this
// reader must take or refuse alike. An adr pool's parameters are not read (its display rating
// is mu).
var modelParameters = map[string][][2]string{
	"elo": {
		{"initial", "number 1500"},
		{"scale", "number 400 >0"},
		{"k_rule", "name fixed fixed|fide|uscf"},
		{"k", "number 32 >=0"},
		{"fide_games", "integer 30 >=0"},
		{"k_new", "number 40 >=0"},
		{"k_regular", "number 20 >=0"},
		{"k_top", "number 10 >=0"},
		{"top_rating", "number 2400"},
		{"uscf_numerator", "number 800 >=0"},
		{"uscf_games_cap", "integer 50 >=0"},
		{"tier_n_min", "integer 15 >=0"},
		{"tier_h_req", "number 400 >0"},
	},
	"glicko2": {
		{"initial", "number 1500"},
		{"rd0", "number 350 >0"},
		{"volatility0", "number 0.06 >0"},
		{"tau", "number 0.5 >0"},
		{"epsilon", "number 1e-06 >0"},
		{"period_ms", "integer 86400000 >=0"},
		{"rd_max", "number 350 >=rd0"},
		{"display_k", "number 0 >=0"},
		{"tier_n_min", "integer 15 >=0"},
		{"tier_h_req", "number 400 >0"},
	},
	"trueskill": {
		{"mu", "number 25"},
		{"sigma", "number 8.333333333333334 >0"},
		{"beta", "number 4.166666666666667 >0"},
		{"tau", "number 0.08333333333333334 >=0"},
		{"display_k", "number 3 >=0"},
		{"tier_n_min", "integer 15 >=0"},
		{"tier_h_req", "number 10 >0"},
	},
	"weng-lin": {
		{"mu", "number 25"},
		{"sigma", "number 8.333333333333334 >0"},
		{"beta", "number 4.166666666666667 >0"},
		{"kappa", "number 0.0001 >0 <=1"},
		{"tau", "number 0.08333333333333333 >=0"},
		{"display_k", "number 3 >=0"},
		{"tier_n_min", "integer 15 >=0"},
		{"tier_h_req", "number 10 >0"},
	},
}

// checkParameters: the stamp's parameters as the engine checks them (modelParameters). It
// returns the model's numbers (given or default) by name, or an error naming the first
// parameter (in the config's order) the engine would refuse.
func checkParameters(model string, parameters map[string]json.RawMessage) (map[string]float64, error) {
	rules := modelParameters[model]
	numbers, names := map[string]float64{}, map[string]string{}
	for _, p := range rules {
		f := strings.Fields(p[1])
		var value interface{} = f[1]
		if f[0] != "name" {
			value, _ = strconv.ParseFloat(f[1], 64)
		}
		raw, given := parameters[p[0]]
		if given && json.Unmarshal(raw, &value) != nil { // a number past float64's range
			return nil, fmt.Errorf("a bad value for %s: %s (the engine takes: %s)", p[0], raw, p[1])
		}
		x, isNumber := value.(float64)
		s, isName := value.(string)
		switch {
		case f[0] == "name" && isName:
			names[p[0]] = s
		case f[0] != "name" && isNumber && !math.IsInf(x, 0) && (f[0] == "number" || x == math.Trunc(x)):
			numbers[p[0]] = x
		default:
			return nil, fmt.Errorf("a bad value for %s: %s (the engine takes: %s)", p[0], raw, p[1])
		}
	}
	for _, p := range rules {
		f := strings.Fields(p[1])
		for _, rule := range f[2:] {
			if !holds(rule, f[0], numbers[p[0]], names[p[0]], numbers) {
				value := string(parameters[p[0]])
				if value == "" {
					value = f[1] + " (its default)"
				}
				return nil, fmt.Errorf("a bad value for %s: %s (the engine takes: %s)", p[0], value, p[1])
			}
		}
	}
	return numbers, nil
}

// holds: whether one RULE of modelParameters holds for a parameter's value.
func holds(rule, kind string, x float64, name string, numbers map[string]float64) bool {
	if kind == "name" {
		for _, allowed := range strings.Split(rule, "|") {
			if name == allowed {
				return true
			}
		}
		return false
	}
	op := strings.TrimRight(rule, "abcdefghijklmnopqrstuvwxyz_0123456789.-")
	operand := rule[len(op):]
	bound, known := numbers[operand]
	if !known {
		bound, _ = strconv.ParseFloat(operand, 64)
	}
	switch op {
	case ">":
		return x > bound
	case ">=":
		return x >= bound
	case "<=":
		return x <= bound
	}
	return false // a rule this reader cannot read: refused
}

// unknownParameter is the first (by name) parameter of the stamp that model does not have, or "".
func unknownParameter(model string, parameters map[string]json.RawMessage) string {
	known := map[string]bool{}
	for _, p := range modelParameters[model] {
		known[p[0]] = true
	}
	names := make([]string, 0, len(parameters))
	for name := range parameters {
		if !known[name] {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	sort.Strings(names)
	return names[0]
}

// parameterNames: the parameters the model has, as an error message lists them.
func parameterNames(model string) string {
	names := make([]string, 0, len(modelParameters[model]))
	for _, p := range modelParameters[model] {
		names = append(names, p[0])
	}
	return strings.Join(names, ", ")
}

// parseModel reads {NS}:model's JSON ({"model": NAME, "params": DIGEST, "parameters": {...}});
// absent (nil) is adr, every release before the key ran ADR only. A model this reader does not
// know, or a value it cannot read, is an error (exit 3): its numbers must not be read as ADR's.
func parseModel(key string, raw interface{}) (Model, error) {
	if raw == nil {
		return Model{Name: "adr"}, nil
	}
	text, _ := raw.(string)
	var stamp struct {
		Model      string          `json:"model"`
		Parameters json.RawMessage `json:"parameters"`
	}
	// parameters: absent, or a JSON object (not null, a list, a number...)
	var parameters map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &stamp); err != nil || stamp.Model == "" ||
		(stamp.Parameters != nil && (json.Unmarshal(stamp.Parameters, &parameters) != nil || parameters == nil)) {
		return Model{}, fmt.Errorf("%s holds %q, not a model stamp: upgrade the reader", key, text)
	}
	m := Model{Name: stamp.Model}
	if m.Name == "adr" {
		return m, nil // its display rating is mu: its parameters are not read
	}
	if _, ok := modelParameters[m.Name]; !ok {
		return Model{}, fmt.Errorf("%s: unknown model %q (this reader knows adr, elo, glicko2, trueskill, weng-lin): upgrade the reader", key, m.Name)
	}
	if name := unknownParameter(m.Name, parameters); name != "" {
		return Model{}, fmt.Errorf("%s: model %q with unknown parameter %q (known: %s): upgrade the reader",
			key, m.Name, name, parameterNames(m.Name))
	}
	numbers, err := checkParameters(m.Name, parameters)
	if err != nil {
		return Model{}, fmt.Errorf("%s: model %q with %w: upgrade the reader", key, m.Name, err)
	}
	if usesSigma[m.Name] {
		m.DisplayK = numbers["display_k"]
	}
	return m, nil
}

// CheckPool reads {NS}:layout and {NS}:model in one MGET (one slot, read-only). It returns
// errUnknownLayout (wrapped, with the value) unless the layout version is one this reader knows
// or absent, and an error for a model it does not know; else it keeps the model for the queries.
func (b *Board) CheckPool(ctx context.Context) error {
	vals, err := b.rdb.MGet(ctx, b.layout(), b.modelKey()).Result()
	if err != nil {
		return err
	}
	if v, ok := vals[0].(string); ok && !layoutVersions[v] {
		return fmt.Errorf("%w: %s is layout %q; this reader knows layout 2: upgrade the reader", errUnknownLayout, b.layout(), v)
	}
	b.model, err = parseModel(b.modelKey(), vals[1])
	return err
}

// text is a script's or a command's string reply; false for nil (RESP2) or Lua false (RESP3).
func text(v interface{}) (string, bool) {
	s, ok := v.(string)
	return s, ok
}
func textOrNil(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
func rankFrom0(r int64) *int64 { r++; return &r }

// around runs ZREVRANK and ZREVRANGE in one read-only script (EVALSHA_RO, EVAL_RO), so no
// consumer batch lands in between.
var around = redis.NewScript(`
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local lo = math.max(0, r - tonumber(ARGV[2]))
return {lo, redis.call('ZREVRANGE', KEYS[1], lo, r + tonumber(ARGV[2]), 'WITHSCORES')}`)

// rank reads ZREVRANK and the hash's mu, tier and sigma in one read-only script: one state.
var rank = redis.NewScript(`
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local fields = redis.call('HMGET', KEYS[2], 'mu', 'tier', 'sigma')
return {r, fields[1], fields[2], fields[3]}`)

// entries adds each member's tier (one pipelined HGET each, not a transaction) to ranked
// (member, score) pairs: the ranks and scores come from one command or script; a tier read
// after it is at most the batches since newer, and moves only at the player's own event.
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
// read-only script, so rank and hash come from the same state. Mu is the model's display
// rating, computed from the hash (the {NS}:lb score of a placed player).
func (b Board) Rank(ctx context.Context, id string) (*Entry, error) {
	reply, err := rank.RunRO(ctx, b.rdb, []string{b.lb(), b.player(id)}, id).Slice()
	if err != nil {
		return nil, err
	}
	muText, ok := text(reply[1])
	if !ok {
		return nil, nil
	}
	// mu is stored as Python's repr of the double: ParseFloat gives the exact value back.
	mu, err := strconv.ParseFloat(muText, 64)
	if err != nil {
		return nil, err
	}
	if usesSigma[b.model.Name] {
		sigmaText, _ := text(reply[3])
		sigma, err := strconv.ParseFloat(sigmaText, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: sigma: %w", b.player(id), err)
		}
		mu = b.model.Display(mu, sigma)
	}
	tier, _ := text(reply[2]) // absent if the hash has no tier field
	e := Entry{Player: id, Mu: mu, Tier: textOrNil(tier)}
	if r, ok := reply[0].(int64); ok {
		e.Rank = rankFrom0(r)
	}
	return &e, nil
}

// Around returns the placed players within k ranks of id (nil if id is unplaced or unknown).
func (b Board) Around(ctx context.Context, id string, k int64) ([]Entry, error) {
	cmd := around.RunRO(ctx, b.rdb, []string{b.lb()}, id, k)
	if errors.Is(cmd.Err(), redis.Nil) || cmd.Val() == false {
		return nil, nil
	}
	reply, err := cmd.Slice()
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

// quiet drops go-redis's own log lines (its dial retries): the one error that ends the command is
// reported once, on stderr, with its exit status.
type quiet struct{}

func (quiet) Printf(context.Context, string, ...interface{}) {}

func main() {
	redis.SetLogger(quiet{})
	os.Exit(run(os.Args[1:]))
}

// failure is the exit status and the message for err: denied for NOPERM and failed
// authentication, layout for an unknown layout version, Redis for everything else.
func failure(err error) int {
	switch {
	case errors.Is(err, errUnknownLayout):
		fmt.Fprintln(os.Stderr, "leaderboard:", err)
		return exitLayout
	case redis.HasErrorPrefix(err, "NOPERM"), redis.HasErrorPrefix(err, "WRONGPASS"),
		redis.HasErrorPrefix(err, "NOAUTH"):
		fmt.Fprintln(os.Stderr, "leaderboard: permission denied:", err)
		return exitDenied
	}
	fmt.Fprintln(os.Stderr, "leaderboard:", err)
	return exitRedis
}

func notFound(id, why string) int {
	fmt.Fprintf(os.Stderr, "leaderboard: player %q %s\n", id, why)
	return exitNotFound
}

func run(args []string) int {
	usage := func() int {
		fmt.Fprintln(os.Stderr, "usage: leaderboard top N | rank PLAYER | around PLAYER K | tier PLAYER | friends ID...")
		return exitUsage
	}
	arity := map[string]int{"top": 2, "rank": 2, "around": 3, "tier": 2}
	if len(args) < 2 || (arity[args[0]] != 0 && len(args) != arity[args[0]]) {
		return usage()
	}
	var n, k int64
	switch args[0] {
	case "top":
		var perr error
		if n, perr = strconv.ParseInt(args[1], 10, 64); perr != nil || n < 1 {
			return usage()
		}
	case "around":
		var perr error
		if k, perr = strconv.ParseInt(args[2], 10, 64); perr != nil || k < 0 {
			return usage()
		}
	case "rank", "tier", "friends":
	default:
		return usage()
	}
	opts, err := redis.ParseURL(env("REDIS_URL", "redis://127.0.0.1:6379/0"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "leaderboard:", err)
		return exitUsage
	}
	opts.MaxRetries = 1
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	b := &Board{rdb: rdb, ns: env("ADR_NAMESPACE", "adr")}
	ctx := context.Background()
	if err := b.CheckPool(ctx); err != nil {
		return failure(err)
	}
	var result interface{}
	switch args[0] {
	case "top":
		result, err = b.Top(ctx, n)
	case "rank":
		var e *Entry
		if e, err = b.Rank(ctx, args[1]); err == nil && e == nil {
			return notFound(args[1], "not found")
		}
		result = e
	case "around":
		var entries []Entry
		if entries, err = b.Around(ctx, args[1], k); err == nil && entries == nil {
			return notFound(args[1], "is not on the leaderboard")
		}
		result = entries
	case "tier":
		tier, terr := b.Tier(ctx, args[1])
		if errors.Is(terr, redis.Nil) {
			return notFound(args[1], "not found")
		}
		result, err = map[string]interface{}{"player": args[1], "tier": textOrNil(tier)}, terr
	case "friends":
		result, err = b.Friends(ctx, args[1:])
	}
	if err != nil {
		return failure(err)
	}
	out, _ := json.Marshal(result)
	fmt.Println(string(out))
	return exitFound
}
