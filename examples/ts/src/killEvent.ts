// Kill event v1 (schemas/kill_event.md) as msgpack, with @msgpack/msgpack.
import { encode } from "@msgpack/msgpack";

export interface KillInput {
  id: string;
  arena: string;
  attacker: string;
  victim: string;
  ts: number; // milliseconds since the Unix epoch
}

// The consumer's limits (schemas/kill_event.md): every id 1-64 bytes of UTF-8, and ts within
// [now - 7 days, now + 60 s] of the consumer's clock.
export const MAX_ID_BYTES = 64;
export const MAX_AGE_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_FUTURE_MS = 60 * 1000;

/** The clock ts is judged against: $ADR_NOW_MS when set (the tests judge schemas/vectors at the
 * file's now_ms, as `adr check --now-ms` does), else this machine's. */
export function nowMs(): number {
  const v = Number(process.env.ADR_NOW_MS);
  return process.env.ADR_NOW_MS && Number.isSafeInteger(v) ? v : Date.now();
}

/**
 * Parse one JSON line and refuse what the consumer would dead-letter, so it is never published:
 * a float ts (wrong_type), an id empty or over 64 bytes (bad_id), attacker == victim
 * (self_kill), ts outside the window around `now` (ts_out_of_range).
 */
export function parseLine(line: string, now: number = nowMs()): KillInput {
  const o = JSON.parse(line);
  for (const f of ["id", "arena", "attacker", "victim"]) {
    if (typeof o[f] !== "string" || o[f] === "") throw new Error(`${f} must be a non-empty string`);
    const bytes = Buffer.byteLength(o[f], "utf8");
    if (bytes > MAX_ID_BYTES) throw new Error(`${f} must be 1-${MAX_ID_BYTES} bytes of UTF-8, got ${bytes} (bad_id)`);
  }
  if (!Number.isSafeInteger(o.ts)) throw new Error("ts must be an integer of milliseconds");
  if (o.attacker === o.victim) {
    throw new Error(`attacker and victim are both "${o.attacker}": a self-kill is not sent (self_kill)`);
  }
  if (o.ts < now - MAX_AGE_MS || o.ts > now + MAX_FUTURE_MS) {
    throw new Error(
      `ts ${o.ts} is outside [now - 7 days, now + 60 s] = [${now - MAX_AGE_MS}, ${now + MAX_FUTURE_MS}]: milliseconds? (ts_out_of_range)`,
    );
  }
  return { id: o.id, arena: o.arena, attacker: o.attacker, victim: o.victim, ts: o.ts };
}

/**
 * A msgpack map with string keys, in the Python encoder's order. @msgpack/msgpack writes a
 * safe-integer Number in its shortest int form (uint64 for a ms time), strings as str; a
 * Buffer/Uint8Array would become bin (wrong_type) and a Date the timestamp extension.
 */
export function encodeKillEvent(e: KillInput): Uint8Array {
  return encode({ v: 1, id: e.id, arena: e.arena, attacker: e.attacker, victim: e.victim, ts: e.ts });
}
