// Reads adr-stream's leaderboards from Redis (docs/leaderboards.md) with ioredis and prints
// JSON: the shapes of `adr leaderboard --json`.
//
//   leaderboard top N            the N best placed players
//   leaderboard rank PLAYER      rank (null while unplaced), mu and tier of one player
//   leaderboard around PLAYER K  the placed players within K ranks of PLAYER
//   leaderboard tier PLAYER      a player's tier label (null while unplaced)
//   leaderboard friends ID...    the placed ones among ids, best first (ZMSCORE)
//
// $REDIS_URL (default redis://127.0.0.1:6379/0), $ADR_NAMESPACE (default adr). Exit status 0;
// 1 for an unknown player (rank, tier) or Redis unreachable; 2 for usage.
import Redis from "ioredis";

export interface Entry {
  rank: number | null;
  player: string;
  mu: number;
  tier: string | null;
}

// ZREVRANK and ZREVRANGE in one script, so no consumer batch lands in between.
const AROUND = `
local r = redis.call('ZREVRANK', KEYS[1], ARGV[1])
if not r then return false end
local lo = math.max(0, r - tonumber(ARGV[2]))
return {lo, redis.call('ZREVRANGE', KEYS[1], lo, r + tonumber(ARGV[2]), 'WITHSCORES')}`;

/** One namespace's board. Every key is "{NS}:..." (the braces are a Cluster hash tag). */
export class Board {
  constructor(private readonly redis: Redis, private readonly ns: string) {}

  private get lb(): string {
    return `{${this.ns}}:lb`;
  }

  private player(id: string): string {
    return `{${this.ns}}:player:${id}`;
  }

  /** Ranked entries from a flat [member, score, ...] reply, with each member's tier. */
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

  /** One player (null if unknown): ZREVRANK and HMGET in one MULTI/EXEC (one state). */
  async rank(id: string): Promise<Entry | null> {
    const replies = await this.redis.multi().zrevrank(this.lb, id).hmget(this.player(id), "mu", "tier").exec();
    if (!replies) throw new Error("transaction aborted");
    const [[e1, rank0], [e2, fields]] = replies;
    if (e1 || e2) throw e1 ?? e2;
    const [mu, tier] = fields as (string | null)[];
    if (mu === null) return null;
    return { rank: rank0 === null ? null : (rank0 as number) + 1, player: id, mu: Number(mu), tier: tier || null };
  }

  /** The placed players within k ranks of id (empty if id is unplaced). */
  async around(id: string, k: number): Promise<Entry[]> {
    const reply = (await this.redis.eval(AROUND, 1, this.lb, id, k)) as [number, string[]] | null;
    if (!reply) return [];
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
    placed.sort(([a, sa], [b, sb]) => Number(sb) - Number(sa) || (a < b ? 1 : a > b ? -1 : 0));
    return this.entries(1, placed.flat());
  }
}

async function main(args: string[]): Promise<number> {
  const usage = () => {
    console.error("usage: leaderboard top N | rank PLAYER | around PLAYER K | tier PLAYER | friends ID...");
    return 2;
  };
  if (args.length < 2) return usage();
  const redis = new Redis(process.env.REDIS_URL || "redis://127.0.0.1:6379/0", { maxRetriesPerRequest: 2 });
  const board = new Board(redis, process.env.ADR_NAMESPACE || "adr");
  try {
    let result: unknown;
    switch (args[0]) {
      case "top": {
        const n = Number(args[1]);
        if (!Number.isInteger(n) || n < 1) return usage();
        result = await board.top(n);
        break;
      }
      case "rank":
        result = await board.rank(args[1]);
        if (result === null) {
          console.error(`leaderboard: no player ${JSON.stringify(args[1])}`);
          return 1;
        }
        break;
      case "around": {
        const k = Number(args[2]);
        if (args.length !== 3 || !Number.isInteger(k) || k < 0) return usage();
        result = await board.around(args[1], k);
        break;
      }
      case "tier": {
        const tier = await board.tier(args[1]);
        if (tier === undefined) {
          console.error(`leaderboard: no player ${JSON.stringify(args[1])}`);
          return 1;
        }
        result = { player: args[1], tier };
        break;
      }
      case "friends":
        result = await board.friends(args.slice(1));
        break;
      default:
        return usage();
    }
    console.log(JSON.stringify(result));
    return 0;
  } catch (err) {
    console.error(`leaderboard: ${(err as Error).message}`);
    return 1;
  } finally {
    redis.disconnect();
  }
}

if (require.main === module) main(process.argv.slice(2)).then((code) => process.exit(code));
