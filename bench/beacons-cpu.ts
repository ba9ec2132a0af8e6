/**
 * Where the event loop's time goes per beacon (issue 28 item 7): CPU
 * milliseconds per 1,000 requests of each stage of `POST /beacons/`, run in
 * this process without a network (requests handed to the handlers
 * directly), read from /proc per thread: the main thread (the event loop)
 * and the others (the beacon store's worker, GC). Meaningful on a loaded
 * machine where wall-clock benches are not; stages run in turn, `--rounds`
 * times, the median printed.
 *
 * Usage: bun bench/beacons-cpu.ts [-- --requests 20000 --rounds 3 --views 1000 --only <stage name part>]
 */
import { beaconBatch } from "./beacon-batch.ts";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { videoInput } from "../machines/test-contexts.ts";
import { parseBeacon } from "../src/analytics/beacon-input.ts";
import { loadConfig } from "../src/config.ts";
import { newId } from "../src/ids.ts";
import { silentLogger } from "../src/log.ts";
import { createService } from "../src/service.ts";
import { cpuArgs, numArg } from "./cpu-args.ts";
import { cpuNow, cpuPer } from "./thread-cpu.ts";

const { requests, rounds, only } = cpuArgs();

const dataDir = mkdtempSync(join(tmpdir(), "bench-beacons-cpu-"));
const service = await createService(loadConfig({ DATA_DIR: dataDir, PORT: "0", RTMP_PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "silent", BEACONS_PER_MINUTE_PER_ADDRESS: "1000000000" }), {
  logger: silentLogger,
  transcriber: null,
});
const { org } = await service.orgs.createOrg("bench");
const video = newId("vid");
await service.runtime.create("video", videoInput({ id: video, orgId: org.id, title: "Bench", sourceUrl: "https://example.com/a.mp4", createdAt: new Date().toISOString() }));

const t0 = Date.now();
const bodyOf = (n: number, id: string) => beaconBatch(n, id, t0, "cpu");
const views = numArg("views", 1000);
const stored = Array.from({ length: views }, (_, n) => bodyOf(n, video));
const unknown = Array.from({ length: views }, (_, n) => bodyOf(n, "vid_nothere"));
const headers = { "content-type": "text/plain;charset=UTF-8", "user-agent": "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/124.0.0.0 Safari/537.36" };
/** As over HTTP: wrk and browsers send Content-Length (readBoundedBody's one-read path). */
const request = (body: string) => new Request("http://127.0.0.1/beacons/", { method: "POST", headers: { ...headers, "content-length": String(Buffer.byteLength(body)) }, body });

/** What the bare `Bun.serve` of bench/beacons.ts does with a request. */
const bare = async (r: Request) => {
  JSON.parse(await r.text());
  return new Response(null, { status: 204, headers: { "access-control-allow-origin": "*" } });
};

const stages: Record<string, (i: number) => unknown> = {
  "bare (read body, JSON.parse, 204)": (i) => bare(request(stored[i % views]!)),
  "parseBeacon alone (validation)": (i) => parseBeacon(stored[i % views]!),
  "intake, unknown ids (not stored)": (i) => service.analytics.intake(request(unknown[i % views]!), "10.1.2.3"),
  "intake, stored (writer + its flushes)": (i) => service.analytics.intake(request(stored[i % views]!), "10.1.2.3"),
  "app.handle, stored (fast path + ops)": (i) => service.app.handle(request(stored[i % views]!)),
};

const results = new Map<string, Array<{ mainMs: number; processMs: number }>>();
for (let r = 0; r < rounds; r++) {
  for (const [name, run] of Object.entries(stages)) {
    if (!name.includes(only)) continue;
    await service.analytics.writer.flush();
    Bun.gc(true);
    const before = cpuNow();
    // 32 in flight, as wrk's connections.
    let next = 0;
    await Promise.all(
      Array.from({ length: 32 }, async () => {
        while (next < requests) await run(next++);
      }),
    );
    await service.analytics.writer.flush();
    const cpu = cpuPer(before, cpuNow(), requests);
    results.set(name, [...(results.get(name) ?? []), cpu]);
  }
}
const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
console.log(`CPU ms per 1,000 requests (10 events each, ${views} views in turn), median of ${rounds} rounds of ${requests.toLocaleString("en")}:`);
for (const [name, xs] of results) {
  const main = med(xs.map((x) => x.mainMs));
  const other = med(xs.map((x) => x.processMs - x.mainMs));
  console.log(`  ${name.padEnd(42)} main thread ${main.toFixed(1).padStart(6)}   other threads ${other.toFixed(1).padStart(6)}`);
}
await service.stop();
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
