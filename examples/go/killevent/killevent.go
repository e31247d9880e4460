// Package killevent encodes adr-stream's kill event v1 (schemas/kill_event.md) as msgpack.
package killevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

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
