import type { Child } from "./service-process.ts";

/**
 * The write-heavy load of issue 24: `POST /videos/` of sources that fail
 * (the origin answers 404), from several clients spread over the processes'
 * ports. Each registration is one write transaction (actor, outbox, work row)
 * and each failing fetch a few more (claim, failure, transition, fan-out), so
 * three processes keep sqld's write lock busy.
 *
 * Every request is bounded (`requestTimeoutMs`, aborted past it and counted as
 * `timeouts`); what clients saw is counted per status, per phase (`phaseOf`:
 * e.g. "sqld stopped"), and the times of successful registrations are kept so
 * a caller can see whether writes kept completing.
 */
export interface LoadStats {
  /** Registrations answered 200/201, in the order they completed. */
  registered: string[];
  /** performance.now() of each successful registration. */
  okTimes: number[];
  /** status → count, per phase. */
  statuses: Map<string, Map<number | "timeout" | "network", number>>;
  /** Answers with a 5xx other than 503 + Retry-After, or a 503 without it: phase → count. */
  dishonest: Map<string, number>;
  /** The longest request seen (ms). */
  longestMs: number;
}

export interface LoadOptions {
  children: () => Child[];
  /** The failing source of registration `i` (unique per i). */
  source: (i: number) => string;
  /** How many clients send at once. */
  clients: number;
  /** Stop after this many registrations were sent, or `until` passes (whichever first). */
  total: number;
  untilMs: number;
  requestTimeoutMs?: number;
  phaseOf?: () => string;
  /** Stop once this answers true (checked before each registration). */
  stopWhen?: () => boolean;
  /** Also read back a registered video (a GET) after each POST: the outage answers of reads. */
  reads?: boolean;
}

export async function runRegistrationLoad(opts: LoadOptions): Promise<LoadStats> {
  const timeout = opts.requestTimeoutMs ?? 20_000;
  const phaseOf = opts.phaseOf ?? (() => "all");
  const stats: LoadStats = { registered: [], okTimes: [], statuses: new Map(), dishonest: new Map(), longestMs: 0 };
  const count = (phase: string, status: number | "timeout" | "network") => {
    let m = stats.statuses.get(phase);
    if (!m) stats.statuses.set(phase, (m = new Map()));
    m.set(status, (m.get(status) ?? 0) + 1);
  };
  let next = 0;
  const end = performance.now() + opts.untilMs;

  async function request(child: Child, path: string, init: RequestInit & { json?: unknown }): Promise<{ status: number; body: any } | null> {
    const phase = phaseOf();
    const t0 = performance.now();
    try {
      const res = await child.api(path, { ...init, signal: AbortSignal.timeout(timeout) });
      const text = await res.text();
      stats.longestMs = Math.max(stats.longestMs, performance.now() - t0);
      count(phase, res.status);
      let body: any = null;
      try {
        body = JSON.parse(text);
      } catch {}
      if (res.status >= 500 && !(res.status === 503 && res.headers.get("retry-after") && body?.error?.code)) {
        stats.dishonest.set(phase, (stats.dishonest.get(phase) ?? 0) + 1);
      }
      return { status: res.status, body };
    } catch (err) {
      stats.longestMs = Math.max(stats.longestMs, performance.now() - t0);
      const timedOut = (err as Error).name === "TimeoutError" || (err as Error).name === "AbortError";
      // A process killed with -9 refuses connections: that is the network, not an answer.
      count(phase, timedOut ? "timeout" : "network");
      return null;
    }
  }

  async function client(n: number) {
    for (;;) {
      if (performance.now() >= end || opts.stopWhen?.()) return;
      const i = next++;
      if (i >= opts.total) return;
      const alive = opts.children().filter((c) => c.proc.exitCode === null && c.proc.signalCode === null);
      if (alive.length === 0) return;
      const child = alive[(n + i) % alive.length]!;
      const res = await request(child, "/videos/", { method: "POST", json: { source_url: opts.source(i), title: `load ${i}` } });
      if (res && (res.status === 200 || res.status === 201)) {
        stats.registered.push(res.body.data.asset.public_id);
        stats.okTimes.push(performance.now());
        if (opts.reads) await request(child, `/videos/${res.body.data.asset.public_id}/`, { method: "GET" });
      } else if (res?.status === 429 || res?.status === 503) {
        await Bun.sleep(200);
      } else if (!res) {
        await Bun.sleep(100);
      }
    }
  }

  await Promise.all(Array.from({ length: opts.clients }, (_, n) => client(n)));
  return stats;
}

/** The longest time (ms) between two successful registrations, and from the start/to the end. */
export function longestGap(okTimes: number[], start: number, end: number): number {
  const t = [start, ...okTimes.toSorted((a, b) => a - b), end];
  let gap = 0;
  for (let i = 1; i < t.length; i++) gap = Math.max(gap, t[i]! - t[i - 1]!);
  return gap;
}
