// Package killevent encodes adr-stream's kill event v1 (schemas/kill_event.md) as msgpack.
package killevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/vmihailenco/msgpack/v5"
)

// KillEvent is kill event v1. The msgpack tags are the wire names: without them the library
// writes Go's field names ("ID", "Arena", ...), which the consumer rejects (missing_field).
// Field order is the order the Python encoder writes, so the bytes match schemas/vectors.
type KillEvent struct {
	V        int    `msgpack:"v"`
	ID       string `msgpack:"id"`
	Arena    string `msgpack:"arena"`
	Attacker string `msgpack:"attacker"`
	Victim   string `msgpack:"victim"`
	TS       int64  `msgpack:"ts"` // milliseconds since the Unix epoch; never a float or time.Time
}

// Input is one JSON line on stdin: {"id","arena","attacker","victim","ts"}.
type Input struct {
	ID       string          `json:"id"`
	Arena    string          `json:"arena"`
	Attacker string          `json:"attacker"`
	Victim   string          `json:"victim"`
	TS       json.RawMessage `json:"ts"`
}

// The consumer's limits (schemas/kill_event.md): every id 1-64 bytes of UTF-8, and ts within
// [now - 7 days, now + 60 s] of the consumer's clock.
const (
	MaxIDBytes  = 64
	MaxAgeMs    = 7 * 24 * 60 * 60 * 1000
	MaxFutureMs = 60 * 1000
)

// NowMs is the clock ts is judged against: $ADR_NOW_MS when set (the tests judge
// schemas/vectors at the file's now_ms, as `adr check --now-ms` does), else this machine's.
func NowMs() int64 {
	if v, err := strconv.ParseInt(os.Getenv("ADR_NOW_MS"), 10, 64); err == nil {
		return v
	}
	return time.Now().UnixMilli()
}

// Check refuses what the consumer would dead-letter, so it is never published: an id empty or
// over 64 bytes (bad_id), attacker == victim (self_kill), ts outside the window around nowMs
// (ts_out_of_range: seconds or microseconds instead of milliseconds, a clock off).
func Check(e KillEvent, nowMs int64) error {
	for _, f := range []struct{ name, value string }{
		{"id", e.ID}, {"arena", e.Arena}, {"attacker", e.Attacker}, {"victim", e.Victim},
	} {
		if len(f.value) == 0 || len(f.value) > MaxIDBytes {
			return fmt.Errorf("%s must be 1-%d bytes of UTF-8, got %d (bad_id)", f.name, MaxIDBytes, len(f.value))
		}
	}
	if e.Attacker == e.Victim {
		return fmt.Errorf("attacker and victim are both %q: a self-kill is not sent (self_kill)", e.Attacker)
	}
	if e.TS < nowMs-MaxAgeMs || e.TS > nowMs+MaxFutureMs {
		return fmt.Errorf("ts %d is outside [now - 7 days, now + 60 s] = [%d, %d]: milliseconds? (ts_out_of_range)",
			e.TS, nowMs-MaxAgeMs, nowMs+MaxFutureMs)
	}
	return nil
}

// FromJSON parses one input line; ts must be an integer (ms), every id non-empty.
func FromJSON(line []byte) (KillEvent, error) {
	var in Input
	if err := json.Unmarshal(line, &in); err != nil {
		return KillEvent{}, err
	}
	// The raw JSON token: a number literal without fraction or exponent ("1.5" and "\"17\""
	// are refused rather than rounded or converted).
	ts, err := strconv.ParseInt(string(in.TS), 10, 64)
	if err != nil {
		return KillEvent{}, fmt.Errorf("ts must be an integer of milliseconds, got %q", in.TS)
	}
	if in.ID == "" || in.Arena == "" || in.Attacker == "" || in.Victim == "" {
		return KillEvent{}, errors.New("id, arena, attacker and victim must be non-empty strings")
	}
	return KillEvent{V: 1, ID: in.ID, Arena: in.Arena, Attacker: in.Attacker, Victim: in.Victim, TS: ts}, nil
}

// Encode writes the event as a msgpack map with string keys. UseCompactInts: ints in their
// shortest form (the library's default writes every int64 as 9 bytes; valid, but not the
// canonical bytes of schemas/vectors).
func Encode(e KillEvent) ([]byte, error) {
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	enc.UseCompactInts(true)
	if err := enc.Encode(&e); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
