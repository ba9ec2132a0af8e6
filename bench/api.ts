/**
 * An authenticated GET through the full stack (auth read from libSQL, rate
 * limiting, envelope) against a bare Bun.serve answering the same JSON, each
 * loaded by the same generator process. Prints throughput, p50/p99, the ratio.
 * Usage: npm run bench:api [-- --seconds 5 --concurrency 32]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig } from "../src/config.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 5);
const concurrency = arg("concurrency", 32);

const dataDir = mkdtempSync(join(tmpdir(), "bench-api-"));
const service = await createService(loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent" }), { logger: silentLogger });
const { org, apiKey } = await service.orgs.createOrg("bench");
// Measure the limiter's cost, not its refusals.
await service.orgs.updateSettings(org.id, (s) => ({ ...s, limits: { ...s.limits, requestsPerMinute: 1_000_000_000 } }));
const { port } = await service.listen();
const fullUrl = `http://127.0.0.1:${port}/api/public/v1/organization/`;
const sample = await (await fetch(fullUrl, { headers: { authorization: `Bearer ${apiKey}` } })).text();

const bare = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(sample, { headers: { "content-type": "application/json" } }) });
const bareUrl = `http://127.0.0.1:${bare.port}/`;

async function load(url: string) {
  const proc = Bun.spawn([process.execPath, join(import.meta.dir, "load-gen.ts"), url, String(seconds), String(concurrency), `authorization:Bearer ${apiKey}`], { stdout: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  return JSON.parse(out.trim().split("\n").pop()!) as { requests: number; errors: number; rps: number; p50: number; p99: number };
}

// Warm both, then measure alternately, three rounds, so drift on this shared machine hits both; the median round is reported.
await load(bareUrl);
await load(fullUrl);
const rounds: Array<{ b: Awaited<ReturnType<typeof load>>; f: Awaited<ReturnType<typeof load>> }> = [];
for (let i = 0; i < 3; i++) rounds.push({ b: await load(bareUrl), f: await load(fullUrl) });
rounds.sort((x, y) => x.f.rps / x.b.rps - y.f.rps / y.b.rps);
const { b, f } = rounds[1]!;
console.log(`rounds (full/bare): ${rounds.map((r) => (r.f.rps / r.b.rps).toFixed(2)).join(", ")}`);
const fmt = (r: typeof b) => `${r.rps.toFixed(0).padStart(7)} req/s  p50 ${r.p50.toFixed(2)} ms  p99 ${r.p99.toFixed(2)} ms  errors ${r.errors}`;
console.log(`bench:api  ${seconds}s x ${concurrency} connections, same load generator process`);
console.log(`bare Bun.serve         ${fmt(b)}`);
console.log(`full stack (auth GET)  ${fmt(f)}`);
console.log(`ratio full/bare throughput: ${(f.rps / b.rps).toFixed(2)}  (target >= 0.50)`);

bare.stop(true);
await service.stop();
rmSync(dataDir, { recursive: true, force: true });
