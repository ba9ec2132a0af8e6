/**
 * Images by URL (issue 27): a real service (native ffmpeg, local store), one
 * 720p30 video of 20 s transcoded to the 720p rung, then
 *  - first requests: thumbnails at distinct times (each one cut), sequential;
 *  - cached requests of one stored thumbnail, sequential, and 304s;
 *  - a 3 s animated GIF at 320 px, first request.
 * Prints p50/p95 in ms. Usage: bun bench/images.ts [--first 15] [--cached 300]
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
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
const t = await startTestService({ env: { MEDIA_BACKEND: "native", LOG_LEVEL: "silent", REQUEST_TIMEOUT_MS: "0" } });
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

const load = (await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ");
console.log(`images by URL, 720p30 H.264 (20 s, 720p rung, 4 s segments), native ffmpeg, local store, ${navigator.hardwareConcurrency} cores, load average ${load}`);
line("thumbnail.jpg first request (1280x720)", first);
line("thumbnail.webp 320x320 crop, first request", sized);
line("thumbnail.jpg cached (stored, 200)", cached);
line("thumbnail.jpg If-None-Match (304)", notModified);
line("animated.gif 3 s 320 px 15 fps, first request", gif);

files.stop(true);
await t.stop({ cleanup: true });
rmSync(out, { recursive: true, force: true });
