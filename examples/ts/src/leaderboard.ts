// Reads adr-stream's leaderboards from Redis (docs/leaderboards.md) with ioredis and prints
// JSON: the shapes of `adr leaderboard --json`.
//
//   leaderboard top N            the N best placed players
//   leaderboard rank PLAYER      rank (null while unplaced), mu and tier of one player
//   leaderboard around PLAYER K  the placed players within K ranks of PLAYER
//   leaderboard tier PLAYER      a player's tier label (null while unplaced)
//   leaderboard friends ID...    the placed ones among ids, best first (ZMSCORE)
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
import { createHash } from "crypto";
import Redis from "ioredis";

/** Exit statuses: docs/leaderboards.md, "Exit status". */
export const EXIT = { found: 0, notFound: 1, usage: 2, redis: 3, denied: 4, layout: 5 } as const;

/** The {NS}:layout values this reader knows; an absent key reads as layout 2 (written before
 * the key existed, docs/leaderboards.md, "Compatibility"). */
const LAYOUT_VERSIONS = new Set(["2"]);

/** {NS}:layout names a layout this reader does not know. */
export class UnknownLayout extends Error {}

/** A pool's rating model as {NS}:model records it (docs/leaderboards.md, "What a reader sees for
 * each model"): the rating ranks use is mu for adr and elo, mu - k*sigma for glicko2 (r - k*RD),
 * trueskill and weng-lin, k the model's display_k. */
export interface Model {
  name: string;
  displayK: number;
}

/** The models whose display rating is mu - display_k * sigma (display_k: the stamp's, or its
 * default in MODEL_PARAMETERS). */
const USES_SIGMA = new Set(["glicko2", "trueskill", "weng-lin"]);

/** The parameters of each model other than adr, in its config's order (engine/_elo.py,
 * _glicko2.py, _trueskill.py, _weng_lin.py), each with the values the engine takes for it:
 * "KIND DEFAULT [RULE...]". KIND: number (a finite JSON number), integer (one with no fraction)
 * or name (a JSON string); DEFAULT: what a stamp without the parameter means; RULE: OP OPERAND
 * (OP >, >=, <=; OPERAND a number or another parameter of the model, its value given or
 * default), or for a name the names it may be (a|b|c). A stamp with another name is a newer
 * release's model, whose display rating this reader may compute wrong; one with a value the
 * engine refuses is no pool a consumer writes: both refused, as `adr leaderboard` refuses them
 * (docs/leaderboards.md, "Exit status"). tests/examples/test_readers_model_rules.py checks the
 * table against the engine: names, kinds and defaults, and a grid of values the engine and this
 * reader must take or refuse alike. An adr pool's parameters are not read (its display rating
 * is mu). */
const MODEL_PARAMETERS: Record<string, Record<string, string>> = {
  elo: {
    initial: "number 1500",
    scale: "number 400 >0",
    k_rule: "name fixed fixed|fide|uscf",
    k: "number 32 >=0",
    fide_games: "integer 30 >=0",
    k_new: "number 40 >=0",
    k_regular: "number 20 >=0",
    k_top: "number 10 >=0",
    top_rating: "number 2400",
    uscf_numerator: "number 800 >=0",
    uscf_games_cap: "integer 50 >=0",
    tier_n_min: "integer 15 >=0",
    tier_h_req: "number 400 >0",
  },
  glicko2: {
    initial: "number 1500",
    rd0: "number 350 >0",
    volatility0: "number 0.06 >0",
    tau: "number 0.5 >0",
    epsilon: "number 1e-06 >0",
    period_ms: "integer 86400000 >=0",
    rd_max: "number 350 >=rd0",
    display_k: "number 0 >=0",
    tier_n_min: "integer 15 >=0",
    tier_h_req: "number 400 >0",
  },
  trueskill: {
    mu: "number 25",
    sigma: "number 8.333333333333334 >0",
    beta: "number 4.166666666666667 >0",
    tau: "number 0.08333333333333334 >=0",
    display_k: "number 3 >=0",
    tier_n_min: "integer 15 >=0",
    tier_h_req: "number 10 >0",
  },
  "weng-lin": {
    mu: "number 25",
    sigma: "number 8.333333333333334 >0",
    beta: "number 4.166666666666667 >0",
    kappa: "number 0.0001 >0 <=1",
    tau: "number 0.08333333333333333 >=0",
    display_k: "number 3 >=0",
    tier_n_min: "integer 15 >=0",
    tier_h_req: "number 10 >0",
  },
};

/** The stamp's parameters as the engine checks them (MODEL_PARAMETERS): the model's numbers
 * (given or default) by name; throws naming the first parameter (in the config's order) the
 * engine would refuse. */
function checkParameters(rules: Record<string, string>, parameters: Record<string, unknown>): Record<string, number> {
  const has = (name: string) => Object.prototype.hasOwnProperty.call(parameters, name);
  const bad = (name: string, value: unknown) =>
    new Error(`a bad value for ${name}: ${JSON.stringify(value)} (the engine takes: ${rules[name]})`);
  const numbers: Record<string, number> = {};
  const names: Record<string, string> = {};
  for (const [name, rule] of Object.entries(rules)) {
    const [kind, fallback] = rule.split(" ");
    const value = has(name) ? parameters[name] : kind === "name" ? fallback : Number(fallback);
    if (kind === "name" && typeof value === "string") names[name] = value;
    else if (kind !== "name" && typeof value === "number" && Number.isFinite(value) &&
      (kind === "number" || Number.isInteger(value))) numbers[name] = value;
    else throw bad(name, value); // JSON.parse reads a number past float64's range as Infinity
  }
  for (const [name, rule] of Object.entries(rules)) {
    const [kind, fallback, ...checks] = rule.split(" ");
    for (const check of checks) {
      if (!holds(check, kind, numbers[name], names[name], numbers))
        throw bad(name, has(name) ? parameters[name] : `${fallback} (its default)`);
    }
  }
  return numbers;
}

/** Whether one RULE of MODEL_PARAMETERS holds for a parameter's value. */
function holds(rule: string, kind: string, x: number, name: string, numbers: Record<string, number>): boolean {
  if (kind === "name") return rule.split("|").includes(name);
  const [, op, operand] = /^([<>]=?)(.*)$/.exec(rule) ?? [];
  const bound = Object.prototype.hasOwnProperty.call(numbers, operand) ? numbers[operand] : Number(operand);
  if (op === ">") return x > bound;
  if (op === ">=") return x >= bound;
  if (op === "<=") return x <= bound;
  return false; // a rule this reader cannot read: refused
}

/** The rating ranks use, from the player hash's mu and sigma. */
export function display(model: Model, mu: number, sigma: number): number {
  return USES_SIGMA.has(model.name) ? mu - model.displayK * sigma : mu;
}

/** {NS}:model's JSON ({"model": NAME, "params": DIGEST, "parameters": {...}}); absent (null) is
 * adr, every release before the key ran ADR only. Throws for a model this reader does not know
 * or a value it cannot read (exit 3): its numbers must not be read as ADR's. */
export function parseModel(key: string, raw: string | null): Model {
  if (raw === null) return { name: "adr", displayK: 0 };
  let stamp: { model?: unknown; parameters?: Record<string, unknown> };
  try {
    stamp = JSON.parse(raw);
  } catch {
    throw new Error(`${key} holds ${JSON.stringify(raw)}, not a model stamp: upgrade the reader`);
  }
  const name = stamp?.model;
  const parameters = stamp?.parameters; // absent, or a JSON object (not null, a list, a number...)
  const isObject = typeof parameters === "object" && parameters !== null && !Array.isArray(parameters);
  if (typeof name !== "string" || name === "" || (parameters !== undefined && !isObject))
    throw new Error(`${key} holds ${JSON.stringify(raw)}, not a model stamp: upgrade the reader`);
  const rules = Object.prototype.hasOwnProperty.call(MODEL_PARAMETERS, name) ? MODEL_PARAMETERS[name] : undefined;
  if (name === "adr") return { name, displayK: 0 };
  if (!rules)
    throw new Error(
      `${key}: unknown model ${JSON.stringify(name)} (this reader knows adr, elo, glicko2, trueskill, weng-lin): upgrade the reader`,
    );
  const known = Object.keys(rules);
  const unknown = Object.keys(parameters ?? {}).filter((p) => !known.includes(p)).sort();
  if (unknown.length > 0)
    throw new Error(
      `${key}: model ${JSON.stringify(name)} with unknown parameter ${JSON.stringify(unknown[0])} (known: ${known.join(", ")}): upgrade the reader`,
    );
  let numbers: Record<string, number>;
  try {
    numbers = checkParameters(rules, parameters ?? {});
  } catch (err) {
    throw new Error(`${key}: model ${JSON.stringify(name)} with ${(err as Error).message}: upgrade the reader`);
  }
  return { name, displayK: USES_SIGMA.has(name) ? numbers.display_k : 0 };
}

export interface Entry {
  rank: number | null;
  player: string;
  mu: number;
  tier: string | null;
}

// ZREVRANK and ZREVRANGE in one read-only script, so no consumer batch lands in between.
const AROUND = `
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local lo = math.max(0, r - tonumber(ARGV[2]))
return {lo, redis.call('ZREVRANGE', KEYS[1], lo, r + tonumber(ARGV[2]), 'WITHSCORES')}`;

// ZREVRANK and the hash's mu, tier and sigma in one read-only script: one state.
const RANK = `
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
local fields = redis.call('HMGET', KEYS[2], 'mu', 'tier', 'sigma')
return {r, fields[1], fields[2], fields[3]}`;

/** One namespace's board. Every key is "{NS}:..." (the braces are a Cluster hash tag). Open it
 * (checkPool) before a query: the rank query needs the pool's model. */
export class Board {
  private model: Model = { name: "adr", displayK: 0 };

  constructor(private readonly redis: Redis, private readonly ns: string) {}

  private get lb(): string {
    return `{${this.ns}}:lb`;
  }

  private player(id: string): string {
    return `{${this.ns}}:player:${id}`;
  }

  /** Reads {NS}:layout and {NS}:model in one MGET (one slot, read-only). Throws UnknownLayout
   * unless the layout version is one this reader knows, or absent, and an Error for a model it
   * does not know; else keeps the model for the queries. */
  async checkPool(): Promise<void> {
    const key = `{${this.ns}}:layout`;
    const modelKey = `{${this.ns}}:model`;
    const [version, model] = await this.redis.mget(key, modelKey);
    if (version !== null && !LAYOUT_VERSIONS.has(version))
      throw new UnknownLayout(`${key} is layout ${JSON.stringify(version)}; this reader knows layout 2: upgrade the reader`);
    this.model = parseModel(modelKey, model);
  }

  /** A read-only script: EVALSHA_RO, and EVAL_RO (which caches it) when Redis has not cached it;
   * the read-only user may run neither SCRIPT LOAD nor EVAL. */
  private async readOnly(source: string, keys: string[], args: (string | number)[]): Promise<unknown> {
    const sha = createHash("sha1").update(source).digest("hex");
    try {
      return await this.redis.call("EVALSHA_RO", sha, keys.length, ...keys, ...args);
    } catch (err) {
      if (!(err as Error).message.startsWith("NOSCRIPT")) throw err;
      return this.redis.call("EVAL_RO", source, keys.length, ...keys, ...args);
    }
  }

  /** Ranked entries from a flat [member, score, ...] reply, with each member's tier (one
   * pipelined HGET each, not a transaction: the ranks and scores come from one command or
   * script; a tier read after it is at most the batches since newer, and moves only at the
   * player's own event). */
  private async entries(firstRank: number, flat: string[]): Promise<Entry[]> {
    const pipe = this.redis.pipeline();
    for (let i = 0; i < flat.length; i += 2) pipe.hget(this.player(flat[i]), "tier");
    const tiers = (await pipe.exec()) ?? [];
    const out: Entry[] = [];
    for (let i = 0; i < flat.length; i += 2) {
      const [err, tier] = tiers[i / 2];
      if (err) throw err;
      // Scores are the doubles' shortest text: Number() gives the exact value back.
      out.push({ rank: firstRank + i / 2, player: flat[i], mu: Number(flat[i + 1]), tier: (tier as string) || null });
    }
    return out;
  }

  /** The n best placed players: ZREVRANGE lb 0 n-1 WITHSCORES. */
  async top(n: number): Promise<Entry[]> {
    return this.entries(1, await this.redis.zrevrange(this.lb, 0, n - 1, "WITHSCORES"));
  }

  /** One player (null if unknown): ZREVRANK and HMGET in one read-only script (one state); mu
   * is the model's display rating, computed from the hash (the {NS}:lb score once placed). */
  async rank(id: string): Promise<Entry | null> {
    const [rank0, mu, tier, sigma] = (await this.readOnly(RANK, [this.lb, this.player(id)], [id])) as [
      number | null,
      string | null,
      string | null,
      string | null,
    ];
    if (mu === null) return null;
    let rating = Number(mu);
    if (USES_SIGMA.has(this.model.name)) {
      const s = sigma === null || sigma === "" ? NaN : Number(sigma);
      if (!Number.isFinite(s)) throw new Error(`${this.player(id)}: sigma ${JSON.stringify(sigma)} is not a number`);
      rating = display(this.model, rating, s);
    }
    return { rank: rank0 === null ? null : rank0 + 1, player: id, mu: rating, tier: tier || null };
  }

  /** The placed players within k ranks of id (null if id is unplaced or unknown). */
  async around(id: string, k: number): Promise<Entry[] | null> {
    const reply = (await this.readOnly(AROUND, [this.lb], [id, k])) as [number, string[]] | null;
    if (!reply) return null;
    return this.entries(reply[0] + 1, reply[1]);
  }

  /** A player's tier label (null while unplaced); undefined for an unknown player. */
  async tier(id: string): Promise<string | null | undefined> {
    const tier = await this.redis.hget(this.player(id), "tier");
    return tier === null ? undefined : tier || null;
  }

  /** The placed players among ids, best first (ties by id descending, as ZREVRANGE orders
   * them), with their tiers; rank is the position among them. One ZMSCORE: nil for an id
   * not on the board. */
  async friends(ids: string[]): Promise<Entry[]> {
    const scores = await this.redis.zmscore(this.lb, ...ids);
    const seen = new Set<string>();
    const placed: [string, string][] = [];
    scores.forEach((s, i) => {
      if (s !== null && !seen.has(ids[i])) placed.push([ids[i], s]);
      seen.add(ids[i]);
    });
    // Ties by id in descending byte order (UTF-8), as Redis orders members; JS's own string
    // order (UTF-16 units) differs for ids with characters beyond U+FFFF.
    placed.sort(([a, sa], [b, sb]) => Number(sb) - Number(sa) || Buffer.compare(Buffer.from(b), Buffer.from(a)));
    return this.entries(1, placed.flat());
  }
}

/** The exit status for a failed read, with its message on stderr. */
function failure(err: unknown): number {
  const message = (err as Error).message ?? String(err);
  if (err instanceof UnknownLayout) {
    console.error(`leaderboard: ${message}`);
    return EXIT.layout;
  }
  if (/^(NOPERM|WRONGPASS|NOAUTH)\b/.test(message)) {
    console.error(`leaderboard: permission denied: ${message}`);
    return EXIT.denied;
  }
  console.error(`leaderboard: ${message}`);
  return EXIT.redis;
}

function validRedisUrl(url: string): boolean {
  try {
    const { protocol, hostname } = new URL(url);
    return (protocol === "redis:" || protocol === "rediss:") && hostname !== "";
  } catch {
    return false;
  }
}

function notFound(id: string, why: string): number {
  console.error(`leaderboard: player ${JSON.stringify(id)} ${why}`);
  return EXIT.notFound;
}

async function main(args: string[]): Promise<number> {
  const usage = () => {
    console.error("usage: leaderboard top N | rank PLAYER | around PLAYER K | tier PLAYER | friends ID...");
    return EXIT.usage;
  };
  const arity: Record<string, number> = { top: 2, rank: 2, around: 3, tier: 2 };
  if (args.length < 2 || (args[0] in arity && args.length !== arity[args[0]])) return usage();
  if (!["top", "rank", "around", "tier", "friends"].includes(args[0])) return usage();
  const n = Number(args[1]);
  if (args[0] === "top" && (!/^[0-9]+$/.test(args[1]) || !Number.isSafeInteger(n) || n < 1)) return usage();
  const k = Number(args[2]);
  if (args[0] === "around" && (!/^[0-9]+$/.test(args[2]) || !Number.isSafeInteger(k))) return usage();
  // ioredis reads any text that is not a URL as a socket path: check it first (without printing
  // it, it may hold a password).
  const url = process.env.REDIS_URL || "redis://127.0.0.1:6379/0";
  if (!validRedisUrl(url)) {
    console.error("leaderboard: REDIS_URL is not a redis:// or rediss:// URL");
    return EXIT.usage;
  }
  // No reconnecting: a reader is one short command, so Redis down is an answer, not a wait.
  const redis = new Redis(url, {
    lazyConnect: true,
    enableReadyCheck: false, // INFO, which the read-only user may not run
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  // A refused AUTH closes the connection: the command then fails with "Connection is closed",
  // so the refusal itself is kept to report.
  let connectionError: Error | undefined;
  redis.on("error", (err: Error) => {
    connectionError ??= err;
  });
  const board = new Board(redis, process.env.ADR_NAMESPACE || "adr");
  try {
    await redis.connect();
    await board.checkPool();
    let result: unknown;
    switch (args[0]) {
      case "top":
        result = await board.top(n);
        break;
      case "rank":
        result = await board.rank(args[1]);
        if (result === null) return notFound(args[1], "not found");
        break;
      case "around":
        result = await board.around(args[1], k);
        if (result === null) return notFound(args[1], "is not on the leaderboard");
        break;
      case "tier": {
        const tier = await board.tier(args[1]);
        if (tier === undefined) return notFound(args[1], "not found");
        result = { player: args[1], tier };
        break;
      }
      default:
        result = await board.friends(args.slice(1));
    }
    console.log(JSON.stringify(result));
    return EXIT.found;
  } catch (err) {
    return failure(connectionError ?? err);
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) main(process.argv.slice(2)).then((code) => process.exit(code));
