/**
 * Fairness between organizations: one organization's normal traffic measured
 * alone, then again while another organization abuses every shared pool
 * (bench/fairness-abuser.ts: RTMP slowloris, slot hoarding, stalled sources,
 * hanging webhook receivers). The service runs as its own process (`bun
 * src/main.ts`), the abuser as a third, so none shares an event loop.
 *
 * The normal organization, in each phase:
 *   - API: 4 clients alternating GET /videos/ and GET /livestreams/ → p50/p99;
 *   - live (a second normal organization, so its recordings do not queue
 *     ahead of the measured videos): create a stream, publish 2 s of the
 *     fixture over RTMP, end and delete it, every 3 s → time from connect to
 *     NetStream.Publish.Start;
 *   - videos: register the 2 s 360p fixture and poll until COMPLETED, in a loop
 *     → time from POST to COMPLETED;
 *   - webhooks: every delivery to its healthy HTTPS receiver → event
 *     created_at to arrival.
 * Prints each figure alone and under abuse, and the ratio (target ≤ 1.5).
 *
 * Usage: bun bench/fairness.ts [--seconds 30]
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readFlvTags } from "../media/flv/flv-reader.ts";
import { hasNativeFfmpeg } from "../media/transcoder/has-native-ffmpeg.ts";
import { publish } from "../media/rtmp/rtmp-publisher.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const SECONDS = arg("seconds", 30);
const ROOT = join(import.meta.dir, "..");
const TLS = join(ROOT, "fixtures/tls");
const dataDir = mkdtempSync(join(tmpdir(), "bench-fair-"));
const bun = process.execPath;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
};

function freePort(): number {
  const s = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response() });
  const port = s.port!;
  s.stop(true);
  return port;
}

async function cli(...args: string[]): Promise<string> {
  const proc = Bun.spawn([bun, join(ROOT, "src/cli/main.ts"), ...args], { env: { ...process.env, DATA_DIR: dataDir, LOG_LEVEL: "error" }, stdout: "pipe", stderr: "pipe" });
  const [out, err, code] = [await new Response(proc.stdout).text(), await new Response(proc.stderr).text(), await proc.exited];
  if (code !== 0) throw new Error(`cli ${args.join(" ")} failed: ${err}`);
  return out;
}

// --- Origins the service talks to -------------------------------------------
const fixture = await Bun.file(join(ROOT, "fixtures/av-360p-2s.mp4")).arrayBuffer();
const files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(fixture, { headers: { "content-type": "video/mp4" } }) });
const trickle = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  idleTimeout: 0,
  fetch: () =>
    new Response(
      new ReadableStream({
        async pull(c) {
          await Bun.sleep(1000);
          c.enqueue(new Uint8Array([0]));
        },
      }),
      { headers: { "content-type": "video/mp4", "content-length": String(100 * 1024 * 1024) } },
    ),
});
const tls = { cert: Bun.file(join(TLS, "server.pem")), key: Bun.file(join(TLS, "server.key")) };
const hanging = Bun.serve({ port: 0, hostname: "127.0.0.1", idleTimeout: 0, tls, fetch: () => new Promise<Response>(() => undefined) });
const arrivals: Array<{ event: string; createdAt: number; at: number }> = [];
const receiver = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  tls,
  async fetch(req) {
    const at = Date.now();
    const body = JSON.parse(await req.text()) as { event: string; created_at: string };
    arrivals.push({ event: body.event, createdAt: Date.parse(body.created_at), at });
    return new Response(null, { status: 204 });
  },
});

// --- The service -------------------------------------------------------------
const port = freePort();
const rtmpPort = freePort();
const base = `http://127.0.0.1:${port}`;
const normal = JSON.parse(await cli("org", "create", "--name", "normal", "--json")) as { org_id: string; api_key: string };
// Live broadcasts end as recordings that are transcoded: a second normal organization runs them, paced,
// so the measured videos do not queue behind the measuring loop's own recordings.
const normalLive = JSON.parse(await cli("org", "create", "--name", "normal-live", "--json")) as { org_id: string; api_key: string };
const abuser = JSON.parse(await cli("org", "create", "--name", "abuser", "--json")) as { org_id: string; api_key: string };
// The measured organizations are not held back by their own request limits.
await cli("org", "set", "--org", normal.org_id, "--ladder", "360p", "--limit", "requests=1000000", "--limit", "livestreams=100000", "--limit", "videos=100000");
await cli("org", "set", "--org", normalLive.org_id, "--ladder", "360p", "--limit", "requests=1000000", "--limit", "livestreams=100000");
// The abuser is on the same plan as the measured organization: what holds it back must be the per-organization
// shares of the pools, not a request allowance too small to reach them in a short run.
await cli("org", "set", "--org", abuser.org_id, "--ladder", "360p", "--limit", "requests=1000000", "--limit", "livestreams=100000", "--limit", "videos=100000");
const backend = hasNativeFfmpeg() ? "native" : "wasm";
const service = Bun.spawn([bun, join(ROOT, "src/main.ts")], {
  env: {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    RTMP_PORT: String(rtmpPort),
    HOST: "127.0.0.1",
    RTMP_HOST: "127.0.0.1",
    BASE_URL: base,
    ALLOW_PRIVATE_NETWORK: "1",
    WEBHOOK_CA_FILE: join(TLS, "ca.pem"),
    LOG_LEVEL: "error",
    MEDIA_BACKEND: backend,
  },
  stdout: Bun.file(join(dataDir, "..", `${dataDir.split("/").pop()}-service.log`)),
  stderr: "pipe",
});
const serviceLog = join(dataDir, "..", `${dataDir.split("/").pop()}-service.log`);
for (let i = 0; ; i++) {
  const ok = await fetch(`${base}/openapi/json`).then(
    (r) => r.ok,
    () => false,
  );
  if (ok) break;
  if (i > 200) throw new Error("the service did not start");
  await Bun.sleep(100);
}

async function api(path: string, json?: unknown, method?: string, key = normal.api_key): Promise<{ status: number; body: any }> {
  const res = await fetch(`${base}/api/public/v1${path}`, {
    method: method ?? (json === undefined ? "GET" : "POST"),
    headers: { authorization: `Bearer ${key}`, ...(json === undefined ? {} : { "content-type": "application/json" }) },
    body: json === undefined ? undefined : JSON.stringify(json),
  });
  return { status: res.status, body: await res.json() };
}

const hook = await api("/webhooks/", {
  url: `https://127.0.0.1:${receiver.port}/normal`,
  events: ["VIDEO_UPLOADED", "VIDEO_TRANSCODING_STARTED", "VIDEO_TRANSCODING_COMPLETED", "LIVESTREAM_SCHEDULED", "LIVESTREAM_ENDED"],
});
if (hook.status !== 201) throw new Error(`cannot register the normal org's webhook: ${JSON.stringify(hook.body)}`);

const flvTags = [...readFlvTags(new Uint8Array(await Bun.file(join(ROOT, "fixtures/live-360p-6s.flv")).arrayBuffer()))].filter((t) => t.timestamp <= 2000);

interface Figures {
  apiMs: number[];
  apiErrors: number;
  publishMs: number[];
  publishFailed: number;
  videoMs: number[];
  videoFailed: number;
  webhookMs: number[];
}

async function phase(label: string): Promise<Figures> {
  const f: Figures = { apiMs: [], apiErrors: 0, publishMs: [], publishFailed: 0, videoMs: [], videoFailed: 0, webhookMs: [] };
  const from = Date.now();
  const until = from + SECONDS * 1000;
  const apiClient = async (i: number) => {
    for (let n = i; Date.now() < until; n++) {
      const t0 = performance.now();
      const r = await api(n % 2 ? "/videos/?limit=20" : "/livestreams/?limit=20").catch(() => ({ status: 599 }));
      f.apiMs.push(performance.now() - t0);
      if (r.status !== 200) f.apiErrors++;
    }
  };
  const liveLoop = async () => {
    for (let n = 0; Date.now() < until; n++) {
      const created = await api("/livestreams/", { title: `${label} ${n}` }, undefined, normalLive.api_key);
      if (created.status !== 201) {
        f.publishFailed++;
        await Bun.sleep(500);
        continue;
      }
      const stream = created.body.data.stream;
      const t0 = performance.now();
      const pub = publish({ url: stream.rtmp_url, tags: flvTags, pace: "fast", timeoutMs: 15_000 });
      try {
        await pub.started;
        f.publishMs.push(performance.now() - t0);
        await pub.finished;
      } catch {
        f.publishFailed++;
      }
      await api(`/livestreams/${stream.id}/end/`, {}, undefined, normalLive.api_key);
      await api(`/livestreams/${stream.id}/`, undefined, "DELETE", normalLive.api_key);
      await Bun.sleep(3000);
    }
  };
  const videoLoop = async () => {
    for (let n = 0; Date.now() < until; n++) {
      const t0 = performance.now();
      const r = await api("/videos/", { source_url: `http://127.0.0.1:${files.port}/clip.mp4?${label}=${n}`, title: `${label} ${n}` });
      if (r.status !== 201) {
        f.videoFailed++;
        continue;
      }
      const id = r.body.data.asset.public_id;
      for (;;) {
        const g = await api(`/videos/${id}/`);
        const status = g.body.data?.video?.status;
        if (status === "COMPLETED") {
          f.videoMs.push(performance.now() - t0);
          break;
        }
        if (status === "ERROR" || performance.now() - t0 > 120_000) {
          f.videoFailed++;
          break;
        }
        await Bun.sleep(100);
      }
    }
  };
  await Promise.all([...[0, 1, 2, 3].map(apiClient), liveLoop(), videoLoop()]);
  f.webhookMs = arrivals.filter((a) => a.createdAt >= from).map((a) => a.at - a.createdAt);
  return f;
}

console.log(`bench:fairness  ${SECONDS}s per phase, backend ${backend}`);
const alone = await phase("alone");

const abuse = Bun.spawn(
  [bun, join(import.meta.dir, "fairness-abuser.ts"), base, String(rtmpPort), abuser.api_key, `https://127.0.0.1:${hanging.port}/hang`, `http://127.0.0.1:${trickle.port}/slow.mp4`],
  { stdout: "pipe", stderr: "inherit" },
);
let lastAbuse = "";
(async () => {
  const reader = abuse.stdout.getReader();
  const dec = new TextDecoder();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    const lines = dec.decode(value).trim().split("\n");
    lastAbuse = lines[lines.length - 1] ?? lastAbuse;
  }
})();
// Let the abuse take hold (sockets open, endpoints registered, sources stalling) before measuring.
await Bun.sleep(10_000);
const abused = await phase("abused");
console.log(`abuser: ${lastAbuse}`);
abuse.kill();

const row = (name: string, a: number[], b: number[], unit = "ms") => {
  const [a50, b50, a99, b99] = [pct(a, 50), pct(b, 50), pct(a, 99), pct(b, 99)];
  console.log(
    `${name.padEnd(26)} alone p50 ${a50.toFixed(1).padStart(8)} p99 ${a99.toFixed(1).padStart(8)} ${unit} (n=${a.length})  |  abused p50 ${b50.toFixed(1).padStart(8)} p99 ${b99.toFixed(1).padStart(8)} ${unit} (n=${b.length})  |  ratio p50 ${(b50 / a50).toFixed(2)}`,
  );
  return b50 / a50;
};
const ratios = [
  row("API GET (lists)", alone.apiMs, abused.apiMs),
  row("RTMP connect → publish", alone.publishMs, abused.publishMs),
  row("POST /videos/ → COMPLETED", alone.videoMs, abused.videoMs),
  row("webhook event → delivery", alone.webhookMs, abused.webhookMs),
];
console.log(
  `failures alone: api ${alone.apiErrors}, publish ${alone.publishFailed}, video ${alone.videoFailed}; abused: api ${abused.apiErrors}, publish ${abused.publishFailed}, video ${abused.videoFailed}`,
);
console.log(`worst ratio (abused/alone, p50): ${Math.max(...ratios.map((r) => (Number.isNaN(r) ? Infinity : r))).toFixed(2)}  (target <= 1.50)`);
const errorLines = (await Bun.file(serviceLog).text()).split("\n").filter((l) => l.includes('"level":"error"')).length;
console.log(`service log: ${serviceLog} (${errorLines} error lines)`);

service.kill("SIGTERM");
await service.exited;
for (const s of [files, trickle, hanging, receiver]) s.stop(true);
rmSync(dataDir, { recursive: true, force: true });
process.exit(0);
