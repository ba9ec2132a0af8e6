/**
 * Images by URL (issue 27): a real service (native ffmpeg, local store), one
 * 720p30 video of 20 s transcoded to the 720p rung, then
 *  - first requests: thumbnails at distinct times (each one cut), sequential;
 *  - cached requests of one stored thumbnail, sequential, and 304s;
 *  - a 3 s animated GIF at 320 px, first request.
 * Prints p50/p95 in ms. Then, side by side in one run on the video's stored
 * 720p segments, the two ways a still is cut (media/images/render-image.ts):
 * the whole segment decoded from its start on a fresh ffmpeg, and the piped
 * way (only the frames needed, on an ffmpeg started beforehand), each with
 * wall p50 and CPU seconds per still (this process's children, /proc/self/stat).
 * Usage: bun bench/images.ts [--first 15] [--cached 300]
 */
import { mkdirSync, readFileSync, rmSync } from "node:fs";
import { join } from "node:path";
import { createImageRenderer } from "../media/images/render-image.ts";
import { STANDARD_RUNGS } from "../src/orgs/org-settings.ts";
import { startTestService } from "../test/support/test-service.ts";
import { makeTestSource } from "./test-source.ts";

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : d;
};
const firstN = arg("first", 15);
const cachedN = arg("cached", 300);

const out = join(import.meta.dir, ".out", "images");
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
const source = makeTestSource(join(out, "source-720p-20s.mp4"), 20);
const files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(source)) });
const t = await startTestService({ env: { MEDIA_BACKEND: "native", LOG_LEVEL: process.env.LOG_LEVEL ?? "silent", REQUEST_TIMEOUT_MS: "0" } });
await t.service.orgs.updateSettings(t.orgId, (s) => ({ ...s, transcoding: { ladder: [STANDARD_RUNGS["720p"]!] } }));

const created = (await (await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${files.port}/source.mp4` } })).json()) as any;
const id = created.data.asset.public_id as string;
for (;;) {
  const v = ((await (await t.api(`/videos/${id}/`)).json()) as any).data.video;
  if (v.status === "ERROR") throw new Error("transcode failed");
  if (v.status === "COMPLETED") break;
  await Bun.sleep(300);
}

const pct = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))]!;
const line = (what: string, xs: number[]) => console.log(`${what.padEnd(44)} n=${String(xs.length).padStart(3)}  p50 ${pct(xs, 50).toFixed(1)} ms  p95 ${pct(xs, 95).toFixed(1)} ms`);

async function timed(url: string, init?: RequestInit): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(url, init);
  const body = await r.text();
  if (r.status !== 200 && r.status !== 304) throw new Error(`${url}: ${r.status} ${body.slice(0, 300)} after ${(performance.now() - t0).toFixed(0)} ms`);
  return performance.now() - t0;
}

const base = `${t.base}/image/${id}`;
const first: number[] = [];
for (let i = 0; i < firstN; i++) first.push(await timed(`${base}/thumbnail.jpg?time=${(0.5 + i * 1.2).toFixed(1)}`));
const sized: number[] = [];
for (let i = 0; i < Math.max(3, Math.floor(firstN / 3)); i++) sized.push(await timed(`${base}/thumbnail.webp?time=${(1 + i * 1.7).toFixed(1)}&width=320&height=320&fit_mode=crop`));
const cachedUrl = `${base}/thumbnail.jpg?time=0.5`;
const etag = (await fetch(cachedUrl)).headers.get("etag")!;
const cached: number[] = [];
for (let i = 0; i < cachedN; i++) cached.push(await timed(cachedUrl));
const notModified: number[] = [];
for (let i = 0; i < cachedN; i++) notModified.push(await timed(cachedUrl, { headers: { "if-none-match": etag } }));
const gif: number[] = [];
for (let i = 0; i < 3; i++) gif.push(await timed(`${base}/animated.gif?start=${i * 5}&end=${i * 5 + 3}&width=320&fps=15`));

// The renderer alone, both ways, alternating on the same stills: ratios hold even on a loaded machine.
const mediaPrefix = `media/${t.service.store.tokenFor(id)}/`;
const segments: string[] = [];
for await (const o of t.service.objects.list(mediaPrefix)) if (o.key.includes("/720p/") && o.key.endsWith(".ts")) segments.push(t.service.objects.localPath(o.key)!);
segments.sort();
/** CPU ms of this process's exited children (cutime + cstime, clock ticks of 10 ms): the ffmpeg runs, start-up included. */
const childCpuMs = () => {
  const stat = readFileSync("/proc/self/stat", "utf8");
  const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(f[13]) + Number(f[14])) * 10;
};
const ways = { whole: createImageRenderer({ backend: "native", piped: false }), piped: createImageRenderer({ backend: "native" }) };
const byWay: Record<string, { wall: number[]; cpu: number[] }> = { whole: { wall: [], cpu: [] }, piped: { wall: [], cpu: [] } };
const spec = { kind: "thumbnail", format: "jpg", width: null, height: null, fitMode: "preserve" } as const;
await ways.piped.render(segments[0]!, join(out, "warmup"), "w.jpg", { ...spec, offset: 0 }, AbortSignal.timeout(60_000));
for (let i = 0; i < firstN; i++) {
  for (const [way, renderer] of Object.entries(ways)) {
    const cpu0 = childCpuMs();
    const t0 = performance.now();
    await renderer.render(segments[i % segments.length]!, join(out, way), `${i}.jpg`, { ...spec, offset: 0.3 + ((i * 0.7) % 3.5) }, AbortSignal.timeout(60_000));
    byWay[way]!.wall.push(performance.now() - t0);
    byWay[way]!.cpu.push(childCpuMs() - cpu0);
  }
}
await Promise.all(Object.values(ways).map((r) => r.close()));

const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
console.log(`images by URL, 720p30 H.264 (20 s, 720p rung, 4 s segments), native ffmpeg, local store, ${navigator.hardwareConcurrency} cores, load average ${load}`);
line("thumbnail.jpg first request (1280x720)", first);
line("thumbnail.webp 320x320 crop, first request", sized);
line("thumbnail.jpg cached (stored, 200)", cached);
line("thumbnail.jpg If-None-Match (304)", notModified);
line("animated.gif 3 s 320 px 15 fps, first request", gif);
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
for (const [way, r] of Object.entries(byWay)) {
  console.log(`${`renderer only, 1280x720 jpg, ${way}`.padEnd(44)} n=${String(r.wall.length).padStart(3)}  p50 ${pct(r.wall, 50).toFixed(1)} ms  ffmpeg CPU ${avg(r.cpu).toFixed(0)} ms per still`);
}

files.stop(true);
await t.stop({ cleanup: true });
rmSync(out, { recursive: true, force: true });
