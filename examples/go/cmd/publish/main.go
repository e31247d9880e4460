// Command publish reads kill events as JSON lines on stdin and publishes each as kill event v1
// to $ADR_TOPIC (default kill-events) on $KAFKA_BOOTSTRAP_SERVERS, keyed by arena.
//
// franz-go: idempotent and acks=all by default (kept), and StickyKeyPartitioner(nil), which
// hashes keys with Kafka's murmur2 exactly as the Java client (and librdkafka's
// murmur2_random) does, so an arena lands on the same partition from every publisher.
// Exits 0 once every record is acknowledged, 1 otherwise (after $ADR_DELIVERY_TIMEOUT_MS,
// default 30000), 2 on bad input: a line that is not a kill event, or one the consumer would
// dead-letter (an id over 64 bytes, a self-kill, ts outside [now - 7 days, now + 60 s] of
// $ADR_NOW_MS or the clock; killevent.Check). With -hex it only encodes: one hex
// line per event on stdout (what the tests compare with schemas/vectors).
package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"adr-stream/examples/go/killevent"
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

// deliveryTimeout is $ADR_DELIVERY_TIMEOUT_MS (default 30 s): how long a record may take to be
// acknowledged, retries included, before the program gives up on it.
func deliveryTimeout() time.Duration {
	ms, err := strconv.Atoi(env("ADR_DELIVERY_TIMEOUT_MS", "30000"))
	if err != nil || ms < 1 {
		ms = 30000
	}
	return time.Duration(ms) * time.Millisecond
}

func main() {
	hexOnly := flag.Bool("hex", false, "only encode: print one hex line per event, no Kafka")
	flag.Parse()
	os.Exit(run(*hexOnly))
}

func run(hexOnly bool) int {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64*1024), 1024*1024)
	var client *kgo.Client
	topic := env("ADR_TOPIC", "kill-events")
	if !hexOnly {
		var err error
		client, err = kgo.NewClient(
			kgo.SeedBrokers(strings.Split(env("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092"), ",")...),
			kgo.DefaultProduceTopic(topic),
			kgo.RecordPartitioner(kgo.StickyKeyPartitioner(nil)), // Java-compatible murmur2
			kgo.RequiredAcks(kgo.AllISRAcks()),
			kgo.ProducerLinger(5*time.Millisecond),
			kgo.RecordDeliveryTimeout(deliveryTimeout()), // fail instead of retrying forever
		)
		if err != nil {
			fmt.Fprintln(os.Stderr, "publish:", err)
			return 1
		}
		defer client.Close()
	}
	var wg sync.WaitGroup
	var failed, sent atomic.Int64
	line := 0
	for in.Scan() {
		line++
		if strings.TrimSpace(in.Text()) == "" {
			continue
		}
		e, err := killevent.FromJSON(in.Bytes())
		if err == nil {
			err = killevent.Check(e, killevent.NowMs())
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "publish: line %d: %v\n", line, err)
			return 2
		}
		value, err := killevent.Encode(e)
		if err != nil {
			fmt.Fprintf(os.Stderr, "publish: line %d: %v\n", line, err)
			return 2
		}
		if hexOnly {
			fmt.Println(hex.EncodeToString(value))
			continue
		}
		wg.Add(1)
		sent.Add(1)
		client.Produce(context.Background(), &kgo.Record{Key: []byte(e.Arena), Value: value},
			func(_ *kgo.Record, err error) {
				defer wg.Done()
				if err != nil && failed.Add(1) <= 5 {
					fmt.Fprintln(os.Stderr, "publish: not delivered:", err)
				}
			})
	}
	if err := in.Err(); err != nil {
		fmt.Fprintln(os.Stderr, "publish: reading stdin:", err)
		return 1
	}
	wg.Wait() // every promise has run: each record acknowledged or failed
	if failed.Load() > 0 {
		fmt.Fprintf(os.Stderr, "publish: %d of %d not delivered\n", failed.Load(), sent.Load())
		return 1
	}
	if !hexOnly {
		fmt.Fprintf(os.Stderr, "publish: %d delivered to %s\n", sent.Load(), topic)
	}
	return 0
}
