// Kill event v1 (schemas/kill_event.md) as msgpack, with @msgpack/msgpack.
import { encode } from "@msgpack/msgpack";

export interface KillInput {
  id: string;
  arena: string;
  attacker: string;
  victim: string;
  ts: number; // milliseconds since the Unix epoch
}

/** Parse one JSON line; ts must be an integer (a float would be encoded as float64: wrong_type). */
export function parseLine(line: string): KillInput {
  const o = JSON.parse(line);
  for (const f of ["id", "arena", "attacker", "victim"]) {
    if (typeof o[f] !== "string" || o[f] === "") throw new Error(`${f} must be a non-empty string`);
  }
  if (!Number.isSafeInteger(o.ts)) throw new Error("ts must be an integer of milliseconds");
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
