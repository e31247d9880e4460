// Reads kill events as JSON lines on stdin and publishes each as kill event v1 to $ADR_TOPIC
// (default kill-events) on $KAFKA_BOOTSTRAP_SERVERS, keyed by arena.
//
// kafkajs: idempotent producer (which needs maxInFlightRequests 1 and acks -1) and the
// Java-compatible murmur2 partitioner, named explicitly (kafkajs 1.x defaulted to a
// partitioner that differed from Java's; 2.x warns when none is given).
// Exits 0 once every message is acknowledged, 1 otherwise (after $ADR_DELIVERY_TIMEOUT_MS,
// default 30000), 2 on bad input: a line that is not a kill event, or one the consumer would
// dead-letter (an id over 64 bytes, a self-kill, ts outside [now - 7 days, now + 60 s] of
// $ADR_NOW_MS or the clock; parseLine).
// With --hex it only encodes: one hex line per event on stdout (tested against schemas/vectors).
import * as readline from "node:readline";
import { Kafka, Partitioners, logLevel, type Message } from "kafkajs";
import { encodeKillEvent, parseLine } from "./killEvent";

const BATCH = 500;

async function main(): Promise<number> {
  const hexOnly = process.argv.includes("--hex");
  const topic = process.env.ADR_TOPIC || "kill-events";
  const messages: Message[] = [];
  let lineNo = 0;
  for await (const line of readline.createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    lineNo++;
    if (line.trim() === "") continue;
    let value: Uint8Array;
    let arena: string;
    try {
      const e = parseLine(line);
      value = encodeKillEvent(e);
      arena = e.arena;
    } catch (err) {
      console.error(`publish: line ${lineNo}: ${(err as Error).message}`);
      return 2;
    }
    if (hexOnly) process.stdout.write(Buffer.from(value).toString("hex") + "\n");
    else messages.push({ key: arena, value: Buffer.from(value) });
  }
  if (hexOnly) return 0;

  const kafka = new Kafka({
    clientId: "adr-publish-ts",
    brokers: (process.env.KAFKA_BOOTSTRAP_SERVERS || "127.0.0.1:9092").split(","),
    logLevel: logLevel.WARN,
    // kafkajs logs with console.log by default: keep stdout for data, logs on stderr.
    logCreator: () => ({ namespace, level, log }) =>
      console.error(JSON.stringify({ level, namespace, message: log.message, error: log.error })),
  });
  const producer = kafka.producer({
    idempotent: true,
    maxInFlightRequests: 1,
    createPartitioner: Partitioners.DefaultPartitioner, // Java-compatible murmur2
  });
  const timeoutMs = Number(process.env.ADR_DELIVERY_TIMEOUT_MS) || 30000;
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`not acknowledged within ${timeoutMs} ms`)), timeoutMs);
  });
  const publish = async () => {
    await producer.connect();
    // Each awaited send returns once the broker acknowledged it (acks -1: all in-sync replicas).
    for (let i = 0; i < messages.length; i += BATCH) {
      await producer.send({ topic, acks: -1, messages: messages.slice(i, i + BATCH) });
    }
  };
  try {
    await Promise.race([publish(), deadline]);
    console.error(`publish: ${messages.length} delivered to ${topic}`);
    return 0;
  } catch (err) {
    console.error(`publish: not delivered: ${(err as Error).message}`);
    return 1;
  } finally {
    clearTimeout(timer);
    await Promise.race([producer.disconnect(), new Promise((r) => setTimeout(r, 1000))]).catch(() => undefined);
  }
}

main().then((code) => process.exit(code));
