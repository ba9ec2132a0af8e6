/**
 * Where a request's CPU goes on the API's read routes (issue 25's bench:api
 * target): CPU microseconds per request of `app.handle` (the full stack: ops
 * observer, auth, rate limits, routing, envelope; no sockets) next to a bare
 * handler building the same Response, requests handed in directly, 32 in
 * flight, read from /proc (bench/thread-cpu.ts); the service is bench:api's
 * (bench/api-fixture.ts). Meaningful on a loaded machine where wall-clock
 * benches are not; the routes run in turn, `--rounds` times, the median printed.
 *
 * Usage: bun bench/api-cpu.ts [-- --requests 20000 --rounds 3 --only <route name part>]
 */
import { startFull } from "./api-fixture.ts";
import { cpuArgs } from "./cpu-args.ts";
import { cpuNow, cpuPer } from "./thread-cpu.ts";

const { requests, rounds, only } = cpuArgs();

const full = await startFull();
const ROUTES: Record<string, string> = {
  organization: "/organization/",
  "a video": `/videos/${full.ids.video}/`,
  "video list": "/videos/?limit=100",
  "a stream": `/livestreams/${full.ids.stream}/`,
  "stream list": "/livestreams/?limit=100",
  "webhooks list": "/webhooks/",
  "404": "/videos/vid_missing/",
};

const results = new Map<string, Array<{ full: number; bare: number }>>();
async function cpuOf(run: () => unknown): Promise<number> {
  Bun.gc(true);
  const before = cpuNow();
  let next = 0;
  await Promise.all(
    Array.from({ length: 32 }, async () => {
      while (next++ < requests) await run();
    }),
  );
  return cpuPer(before, cpuNow(), requests, 1).processMs * 1000;
}
const request = (path: string) => new Request(full.base + path, { headers: full.auth });
for (let r = 0; r < rounds; r++) {
  for (const [name, path] of Object.entries(ROUTES)) {
    if (!name.includes(only)) continue;
    const sample = await full.service.app.handle(request(path));
    const body = await sample.text();
    const headers = Object.fromEntries([...sample.headers].filter(([k]) => k !== "content-length"));
    // Both sides' bodies are read, as a socket write would.
    const bare = await cpuOf(async () => {
      request(path).headers.get("authorization");
      return new Response(body, { status: sample.status, headers }).arrayBuffer();
    });
    const app = await cpuOf(async () => (await full.service.app.handle(request(path))).arrayBuffer());
    results.set(name, [...(results.get(name) ?? []), { full: app, bare }]);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`CPU µs per request (all threads), app.handle vs a bare handler, median of ${rounds} rounds of ${requests.toLocaleString("en")}:`);
for (const [name, xs] of results) {
  const app = med(xs.map((x) => x.full));
  const bare = med(xs.map((x) => x.bare));
  console.log(`  ${name.padEnd(16)} full ${app.toFixed(1).padStart(6)}   bare ${bare.toFixed(1).padStart(6)}   full - bare ${(app - bare).toFixed(1).padStart(6)}`);
}
await full.stop();
process.exit(0);
