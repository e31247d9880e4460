package main

// parseModel's verdict on each stamp of the file $ADR_STAMPS (one {NS}:model value a line),
// written to $ADR_VERDICTS a line each: "ok DISPLAY_K" or "refused REASON". The engine's verdict
// on the same stamps is compared by tests/examples/test_readers_model_rules.py, which runs this;
// without $ADR_STAMPS it skips.

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
)

func TestStampVerdicts(t *testing.T) {
	stamps, verdicts := os.Getenv("ADR_STAMPS"), os.Getenv("ADR_VERDICTS")
	if stamps == "" || verdicts == "" {
		t.Skip("$ADR_STAMPS and $ADR_VERDICTS name the files (tests/examples/test_readers_model_rules.py)")
	}
	in, err := os.Open(stamps)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var out strings.Builder
	lines := bufio.NewScanner(in)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	for lines.Scan() {
		m, err := parseModel("{adr}:model", lines.Text())
		if err != nil {
			fmt.Fprintf(&out, "refused %s\n", strings.ReplaceAll(err.Error(), "\n", " "))
		} else {
			fmt.Fprintf(&out, "ok %v\n", m.DisplayK)
		}
	}
	if err := lines.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(verdicts, []byte(out.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
