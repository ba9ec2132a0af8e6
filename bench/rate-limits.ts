/**
 * What exact shared rate limits cost per request: the `memory` store (counted
 * in the process) against the `database` store (each request decided by the
 * database) on the embedded file and on a real libSQL server (sqld, over
 * HTTP and WebSocket).
 *
 * 1. Per `hit` (two checks, as a POST with an organization limit): latency
 *    one at a time, and p50/p99 and throughput with 32 requests in flight.
 * 2. Through HTTP: authenticated GETs (bench/load-gen.ts in its own process)
 *    against the service with each store, on the file and on sqld.
 *
 * Usage: bun bench/rate-limits.ts [--seconds 3 --concurrency 32 --hits 2000]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startSqld } from "../test/support/sqld.ts";
import { loadConfig } from "../src/config.ts";
import { createDatabase, type Database } from "../src/db/create-database.ts";
import { createRateLimiter, type LimitCheck, type RateLimitStore } from "../src/http/rate-limiter.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 3);
const concurrency = arg("concurrency", 32);
const hits = arg("hits", 2000);

const sqld = await startSqld();
const dirs: string[] = [];
const tempDir = (name: string) => {
  const d = mkdtempSync(join(tmpdir(), `bench-limits-${name}-`));
  dirs.push(d);
  return d;
};
const fileUrl = () => `file:${join(tempDir("db"), "bench.db")}`;

const quantile = (xs: number[], p: number) => xs[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? 0;
const us = (ms: number) => `${(ms * 1000).toFixed(1).padStart(8)} µs`;

interface HitFigures {
  serialP50: number;
  serialP99: number;
  p50: number;
  p99: number;
  perSecond: number;
}

/** One limiter on `url`; limits high enough that every hit is counted (the cost of a success). */
async function measureHits(store: RateLimitStore, url: string): Promise<HitFigures> {
  const database: Database = await createDatabase({ url });
  const limiter = createRateLimiter({ database, logger: silentLogger, store });
  const checks = (i: number): LimitCheck[] => [
    { key: `key:bench-${i % 64}`, limit: 1e12 },
    { key: `org:bench:videos.create`, limit: 1e12 },
  ];
  const n = store === "memory" ? hits * 50 : hits;
  // Warm-up (connections, statement caches).
  for (let i = 0; i < 50; i++) await limiter.hit(checks(i));

  const serial: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    const r = limiter.hit(checks(i));
    if (r instanceof Promise) await r;
    serial.push(performance.now() - t0);
  }
  serial.sort((a, b) => a - b);

  const inFlight: number[] = [];
  let next = 0;
  const start = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < n) {
        const i = next++;
        const t0 = performance.now();
        const r = limiter.hit(checks(i));
        if (r instanceof Promise) await r;
        inFlight.push(performance.now() - t0);
      }
    }),
  );
  const elapsed = performance.now() - start;
  inFlight.sort((a, b) => a - b);
  await limiter.stop();
  database.close();
  return { serialP50: quantile(serial, 0.5), serialP99: quantile(serial, 0.99), p50: quantile(inFlight, 0.5), p99: quantile(inFlight, 0.99), perSecond: (n / elapsed) * 1000 };
}

interface HttpFigures {
  rps: number;
  p50: number;
  p99: number;
  errors: number;
}

async function measureHttp(store: RateLimitStore, databaseUrl: string): Promise<HttpFigures> {
  const dataDir = tempDir("svc");
  const env = { DATA_DIR: dataDir, DATABASE_URL: databaseUrl, RATE_LIMIT_STORE: store, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" };
  const service = await createService(loadConfig(env), { logger: silentLogger });
  const { org, apiKey } = await service.orgs.createOrg(`bench-${store}-${Math.random().toString(36).slice(2)}`);
  // Measure the limiter's cost, not its refusals.
  await service.orgs.updateSettings(org.id, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 1_000_000_000 } }));
  const { port } = await service.listen();
  const url = `http://127.0.0.1:${port}/api/public/v1/organization/`;
  const load = async (secs: number) => {
    const proc = Bun.spawn([process.execPath, join(import.meta.dir, "load-gen.ts"), url, String(secs), String(concurrency), `authorization:Bearer ${apiKey}`], { stdout: "pipe" });
    const out = await new Response(proc.stdout).text();
    await proc.exited;
    return JSON.parse(out.trim().split("\n").pop()!) as HttpFigures;
  };
  await load(1);
  const r = await load(seconds);
  await service.stop();
  return r;
}

const targets: Array<{ name: string; store: RateLimitStore; url: () => string }> = [
  { name: "memory (file)", store: "memory", url: fileUrl },
  { name: "database, file", store: "database", url: fileUrl },
  { name: "database, sqld http", store: "database", url: () => sqld.url },
  { name: "database, sqld ws", store: "database", url: () => sqld.wsUrl },
];

console.log(`bench:rate-limits  hit: ${hits} serial + ${hits} with ${concurrency} in flight (memory: x50); HTTP: ${seconds}s x ${concurrency} connections`);
console.log("\n1. Per hit (two checks: key + organization)");
console.log(`${"store".padEnd(22)} ${"serial p50".padStart(11)} ${"serial p99".padStart(11)} ${"p50".padStart(11)} ${"p99".padStart(11)} ${"hits/s".padStart(9)}`);
const hitFigures = new Map<string, HitFigures>();
for (const t of targets) {
  const f = await measureHits(t.store, t.url());
  hitFigures.set(t.name, f);
  console.log(`${t.name.padEnd(22)} ${us(f.serialP50)} ${us(f.serialP99)} ${us(f.p50)} ${us(f.p99)} ${f.perSecond.toFixed(0).padStart(9)}`);
}
const mem = hitFigures.get("memory (file)")!;
for (const t of targets.slice(1)) {
  const f = hitFigures.get(t.name)!;
  console.log(`  ${t.name}: serial p50 x${(f.serialP50 / mem.serialP50).toFixed(0)} of memory, +${((f.serialP50 - mem.serialP50) * 1000).toFixed(0)} µs per request`);
}

console.log("\n2. Through HTTP (authenticated GET /organization/)");
const httpRuns: Array<{ name: string; store: RateLimitStore; url: () => string }> = [
  { name: "file, memory", store: "memory", url: fileUrl },
  { name: "file, database", store: "database", url: fileUrl },
  { name: "sqld, memory", store: "memory", url: () => sqld.url },
  { name: "sqld, database", store: "database", url: () => sqld.url },
];
const http = new Map<string, HttpFigures>();
for (const r of httpRuns) {
  const f = await measureHttp(r.store, r.url());
  http.set(r.name, f);
  console.log(`${r.name.padEnd(16)} ${f.rps.toFixed(0).padStart(7)} req/s  p50 ${f.p50.toFixed(2)} ms  p99 ${f.p99.toFixed(2)} ms  errors ${f.errors}`);
}
const ratio = (a: string, b: string) => (http.get(a)!.rps / http.get(b)!.rps).toFixed(2);
console.log(`ratio database/memory throughput: file ${ratio("file, database", "file, memory")}, sqld ${ratio("sqld, database", "sqld, memory")}`);

await sqld.stop();
for (const d of dirs) rmSync(d, { recursive: true, force: true });
process.exit(0);
