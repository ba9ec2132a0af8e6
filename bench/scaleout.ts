/**
 * Scale-out: the same service as 1, 2 and 3 processes on one libSQL server
 * (sqld) and one S3-compatible bucket (s3rver), against the embedded default
 * (one process, a file database, a local directory), side by side in one run.
 *
 * Two figures per setup:
 * - authenticated GETs (`GET /videos/{id}/`, an item read with auth and rate
 *   limiting) loaded by `wrk` (Debian's package: `apt-get install wrk`), one
 *   wrk per process at once, connections split between them, summed;
 * - POST /videos/ + transcode completions: K videos registered round-robin
 *   over the processes (native ffmpeg, a 3 s 720p fixture fetched from a local
 *   origin), timed until every one is COMPLETED; videos per minute.
 *
 * Beside req/s: CPU per GET (/proc/<pid>/stat) of the service processes
 * together and of sqld, the figure that stays comparable on a shared machine.
 * The seed video is read once it is COMPLETED.
 *
 * All processes share this 2-core machine, so more processes add no CPU: the
 * figures show what coordination through sqld and the bucket costs, not what
 * more machines would gain (docs/scaling.md).
 *
 * Usage: bun bench/scaleout.ts [--seconds 5] [--videos 6 (0: the GETs only)] [--connections 32] [--setups 0,1,3,4 (rows, by index)]
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startS3rver } from "../test/support/s3rver.ts";
import { type Child, spawnService } from "../test/support/service-process.ts";
import { startSqld } from "../test/support/sqld.ts";
import { startFileServer } from "../test/support/file-server.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const seconds = arg("seconds", 5);
const videoCount = arg("videos", 6);
const connections = arg("connections", 32);

if (!Bun.which("wrk")) {
  console.error("bench:scaleout needs wrk (an independent HTTP load generator): apt-get install -y wrk");
  process.exit(1);
}
if (!Bun.which("ffmpeg")) {
  console.error("bench:scaleout transcodes with native ffmpeg: apt-get install -y ffmpeg");
  process.exit(1);
}

/** CPU seconds (user + system) the processes used so far (/proc/<pid>/stat, clock ticks of 1/100 s). */
function cpuSeconds(pids: number[]): number {
  let ticks = 0;
  for (const pid of pids) {
    const fields = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" ");
    ticks += Number(fields[11]) + Number(fields[12]);
  }
  return ticks / 100;
}

interface WrkResult {
  requests: number;
  rps: number;
  p99: number;
  non2xx: number;
}

const toMs = (v: string) => {
  const m = /^([\d.]+)(us|ms|s)$/.exec(v.trim());
  if (!m) return Number.NaN;
  const n = Number(m[1]);
  return m[2] === "us" ? n / 1000 : m[2] === "s" ? n * 1000 : n;
};

async function wrk(url: string, apiKey: string, conns: number): Promise<WrkResult> {
  const proc = Bun.spawn(["wrk", "-t1", `-c${conns}`, `-d${seconds}s`, "--latency", "-H", `Authorization: Bearer ${apiKey}`, url], { stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? Number.NaN);
  const p99 = toMs(/^\s+99%\s+(\S+)/m.exec(out)?.[1] ?? "");
  const non2xx = Number(/Non-2xx or 3xx responses:\s+(\d+)/.exec(out)?.[1] ?? 0);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? Number.NaN);
  return { requests, rps, p99, non2xx };
}

interface Setup {
  name: string;
  processes: number;
  engines: "embedded" | "sqld+s3";
  env?: Record<string, string>;
  /** DATABASE_URL as `http://` (Hrana over HTTP for the hot reads too) instead of `libsql://…?tls=0` (a WebSocket for them). */
  http?: boolean;
}

interface Figures {
  getRps: number;
  /** CPU per GET (user + system, from /proc): the service processes together, and sqld. */
  cpuServiceUs: number;
  cpuSqldUs: number;
  getP99: number;
  getErrors: number;
  videosPerMin: number;
  videoSeconds: number;
}

const origin = startFileServer();
const SECRET_KEY = "b".repeat(64);

async function run(setup: Setup): Promise<Figures> {
  const dirs: string[] = [];
  const children: Child[] = [];
  const sqld = setup.engines === "sqld+s3" ? await startSqld() : null;
  const s3 = setup.engines === "sqld+s3" ? await startS3rver() : null;
  try {
    const shared = mkdtempSync(join(tmpdir(), "bench-scaleout-"));
    dirs.push(shared);
    for (let i = 0; i < setup.processes; i++) {
      const dataDir = sqld ? mkdtempSync(join(tmpdir(), "bench-scaleout-p-")) : shared;
      if (sqld) dirs.push(dataDir);
      const env: Record<string, string> = {
        DATA_DIR: dataDir,
        PORT: "0",
        RTMP_PORT: "0",
        SECRET_KEY,
        MEDIA_BACKEND: "native",
        LOG_LEVEL: "silent",
        ...(sqld ? { DATABASE_URL: setup.http ? sqld.httpUrl : sqld.url } : {}),
        ...(s3 ? s3.env : {}),
        ...setup.env,
      };
      const first = children[0];
      children.push(await spawnService(env, first ? { orgId: first.orgId, apiKey: first.apiKey } : undefined));
    }
    const [first] = children;
    if (!first) throw new Error("no process");

    // GETs: one video to read, one wrk per process at once.
    const seed = (await (await first.api("/videos/", { method: "POST", json: { source_url: origin.url("av-360p-2s.mp4?seed"), title: "seed" } })).json()) as any;
    const seedId = seed.data.asset.public_id as string;
    // Read once it is COMPLETED: its transcode (ffmpeg, and transitions that empty every process's read cache) is not what the GETs measure.
    for (const until = Date.now() + 180_000; Date.now() < until; await Bun.sleep(200)) {
      const v = ((await (await first.api(`/videos/${seedId}/`)).json()) as any).data?.video;
      if (v?.status === "COMPLETED") break;
      if (v?.status === "ERROR") throw new Error(`seed video failed: ${JSON.stringify(v.error)}`);
    }
    const per = Math.max(1, Math.floor(connections / children.length));
    await Promise.all(children.map((c) => wrk(`${c.base}/api/public/v1/videos/${seedId}/`, c.apiKey, per))); // warm
    const servicePids = children.map((c) => c.proc.pid);
    const cpu0 = { service: cpuSeconds(servicePids), sqld: sqld ? cpuSeconds([sqld.pid]) : 0 };
    const loads = await Promise.all(children.map((c) => wrk(`${c.base}/api/public/v1/videos/${seedId}/`, c.apiKey, per)));
    const count = loads.reduce((s, l) => s + l.requests, 0);
    const gets = {
      getRps: loads.reduce((s, l) => s + l.rps, 0),
      getP99: Math.max(...loads.map((l) => l.p99)),
      getErrors: loads.reduce((s, l) => s + l.non2xx, 0),
      cpuServiceUs: ((cpuSeconds(servicePids) - cpu0.service) / count) * 1e6,
      cpuSqldUs: sqld ? ((cpuSeconds([sqld.pid]) - cpu0.sqld) / count) * 1e6 : 0,
    };
    // --videos 0: the GETs only.
    if (videoCount === 0) return { ...gets, videosPerMin: Number.NaN, videoSeconds: Number.NaN };

    // Videos: register round-robin, wait for every COMPLETED.
    const t0 = performance.now();
    const ids: string[] = [];
    for (let i = 0; i < videoCount; i++) {
      const c = children[i % children.length]!;
      const res = (await (await c.api("/videos/", { method: "POST", json: { source_url: origin.url(`av-720p-3s.mp4?v=${i}-${setup.name}`), title: `v${i}` } })).json()) as any;
      ids.push(res.data.asset.public_id);
    }
    const pending = new Set(ids);
    const deadline = Date.now() + 10 * 60_000;
    while (pending.size > 0 && Date.now() < deadline) {
      for (const id of [...pending]) {
        const c = children[Math.floor(Math.random() * children.length)]!;
        const v = ((await (await c.api(`/videos/${id}/`)).json()) as any).data?.video;
        if (v?.status === "COMPLETED") pending.delete(id);
        else if (v?.status === "ERROR") throw new Error(`video ${id} failed: ${JSON.stringify(v.error)}`);
      }
      await Bun.sleep(100);
    }
    if (pending.size > 0) throw new Error(`${pending.size} videos not COMPLETED in time`);
    const videoSeconds = (performance.now() - t0) / 1000;
    return {
      ...gets,
      videosPerMin: (videoCount / videoSeconds) * 60,
      videoSeconds,
    };
  } finally {
    await Promise.all(children.map((c) => c.stop()));
    await sqld?.stop();
    await s3?.stop();
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  }
}

const setups: Setup[] = [
  { name: "embedded (file + local), 1 process", processes: 1, engines: "embedded" },
  { name: "sqld + s3rver, 1 process", processes: 1, engines: "sqld+s3" },
  // The exact shared limiter's share of the cost: the same, counting in memory (not exact across processes).
  { name: "  same, RATE_LIMIT_STORE=memory", processes: 1, engines: "sqld+s3", env: { RATE_LIMIT_STORE: "memory" } },
  { name: "sqld + s3rver, 2 processes", processes: 2, engines: "sqld+s3" },
  { name: "sqld + s3rver, 3 processes", processes: 3, engines: "sqld+s3" },
  { name: "  same, DATABASE_URL=http://", processes: 3, engines: "sqld+s3", http: true },
];
// --setups 0,1,4: only those rows (the first should stay the embedded default the ratios are against).
const only = process.argv.includes("--setups")
  ? new Set(
      String(process.argv[process.argv.indexOf("--setups") + 1])
        .split(",")
        .map(Number),
    )
  : null;
const results: Array<{ setup: Setup; f: Figures }> = [];
for (const [i, setup] of setups.entries()) if (!only || only.has(i)) results.push({ setup, f: await run(setup) });
origin.stop();

const base = results[0]!.f;
console.log(`bench:scaleout  GET /videos/{id}/ by wrk ${seconds}s x ${connections} connections (split over the processes); ${videoCount} videos (3 s 720p, native ffmpeg)`);
console.log("setup                                   GET req/s   p99 ms  non-2xx   ratio  cpu µs/GET svc+sqld | videos/min  ratio  (all COMPLETED in)");
for (const { setup, f } of results) {
  console.log(
    `${setup.name.padEnd(38)} ${f.getRps.toFixed(0).padStart(9)} ${f.getP99.toFixed(2).padStart(8)} ${String(f.getErrors).padStart(8)} ${(f.getRps / base.getRps).toFixed(2).padStart(7)} ${f.cpuServiceUs.toFixed(0).padStart(9)}+${f.cpuSqldUs.toFixed(0).padEnd(9)} | ${f.videosPerMin.toFixed(1).padStart(10)} ${(f.videosPerMin / base.videosPerMin).toFixed(2).padStart(6)}  (${f.videoSeconds.toFixed(1)} s)`,
  );
}
console.log("ratios are against the embedded default (1.00); all processes share this machine's 2 cores");
