import { join } from "node:path";
import { type Browser, chromium } from "playwright-core";
import { CHROMIUM, CHROMIUM_ARGS } from "./browser.ts";

const HLS_JS = join(import.meta.dir, "..", "..", "node_modules", "hls.js", "dist", "hls.js");

/**
 * hls.js with `lowLatencyMode: true` in Chromium, watching a live playlist:
 * `hls.latency` sampled every 500 ms once playing, the parts and segments it
 * loaded, its fatal error if any. Used by test/live-llhls.test.ts and
 * bench/live.ts (the page comes from a server of its own: cross-origin).
 */
const PAGE = `<!doctype html><html><head><meta charset="utf-8"><script src="/hls.js"></script></head>
<body><video id="v" muted playsinline width="320"></video><script>
window.watchLive = (o) => new Promise((resolve) => {
  const video = document.getElementById("v");
  const hls = new Hls({ lowLatencyMode: true, liveDurationInfinity: true });
  const latencies = [], errors = [];
  let parts = 0, segments = 0, started = null, blocking = 0;
  hls.on(Hls.Events.FRAG_LOADED, (_e, d) => { if (d.part) parts++; else segments++; });
  hls.on(Hls.Events.LEVEL_LOADED, (_e, d) => { if (/_HLS_msn=/.test(d.details.url || "")) blocking++; });
  hls.on(Hls.Events.ERROR, (_e, d) => { if (d.fatal) { errors.push(d.details); finish(); } });
  const finish = () => { clearInterval(poll); clearTimeout(limit); const r = { latencies, parts, segments, blocking, errors, currentTime: video.currentTime, partTarget: hls.levels[0]?.details?.partTarget ?? null, canBlockReload: hls.levels[0]?.details?.canBlockReload ?? null }; hls.destroy(); resolve(r); };
  const poll = setInterval(() => {
    if (video.currentTime > 0 && started === null) started = performance.now();
    if (started !== null && Number.isFinite(hls.latency)) latencies.push(hls.latency);
    if (started !== null && performance.now() - started >= o.seconds * 1000) finish();
  }, 500);
  const limit = setTimeout(finish, o.timeoutMs);
  hls.loadSource(o.url);
  hls.attachMedia(video);
  video.play().catch(() => {});
});
</script></body></html>`;

export interface LiveWatch {
  latencies: number[];
  parts: number;
  segments: number;
  /** Playlist reloads hls.js made as blocking requests (`_HLS_msn`). */
  blocking: number;
  errors: string[];
  currentTime: number;
  partTarget: number | null;
  canBlockReload: boolean | null;
}

export async function startLlHlsPlayer(): Promise<{ watch(url: string, opts: { seconds: number; timeoutMs: number }): Promise<LiveWatch>; close(): Promise<void> }> {
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    fetch(req) {
      const path = new URL(req.url).pathname;
      if (path === "/hls.js") return new Response(Bun.file(HLS_JS), { headers: { "content-type": "text/javascript" } });
      return new Response(PAGE, { headers: { "content-type": "text/html; charset=utf-8" } });
    },
  });
  let browser: Browser;
  try {
    browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
  } catch (err) {
    server.stop(true);
    throw err;
  }
  return {
    async watch(url, opts) {
      const page = await browser.newPage();
      const t0 = Date.now();
      const log: string[] = [];
      page.on("request", (r) => {
        if (process.env.LLHLS_DEBUG && r.url().startsWith(new URL(url).origin)) log.push(`${Date.now() - t0} ${r.url().split("/").pop()}`);
      });
      page.on("requestfinished", (r) => {
        if (process.env.LLHLS_DEBUG && r.url().startsWith(new URL(url).origin)) log.push(`${Date.now() - t0} done ${r.url().split("/").pop()}`);
      });
      try {
        await page.goto(`http://127.0.0.1:${server.port}/`);
        const r = (await page.evaluate((o) => (globalThis as unknown as { watchLive(o: unknown): LiveWatch }).watchLive(o), { url, ...opts })) as LiveWatch;
        if (process.env.LLHLS_DEBUG) console.log(log.join("\n"), JSON.stringify(r));
        return r;
      } finally {
        await page.close();
      }
    },
    async close() {
      await browser.close();
      server.stop(true);
    },
  };
}

export const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? Number.NaN : s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};
