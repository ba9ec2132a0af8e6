/**
 * Issue 26 item 5, LL-HLS figures (run by bench/live.ts): hls.js with
 * `lowLatencyMode: true` in Chromium watching a real-time RTMP broadcast of
 * 2 s segments (ffmpeg, the 6 s fixture looped), `hls.latency` sampled every
 * 500 ms for `seconds`: the median per run; and SRT publish (ffmpeg spawned
 * as an SRT caller) → the broadcast's first LL-HLS part in the playlist.
 */
import { join } from "node:path";
import type { Service } from "../src/service.ts";
import { median, startLlHlsPlayer } from "../test/support/llhls-player.ts";

const FIXTURE = join(import.meta.dir, "..", "fixtures", "live-360p-6s.flv");

async function until<T>(probe: () => Promise<T | undefined>, ms: number): Promise<T | undefined> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const v = await probe();
    if (v !== undefined) return v;
    await Bun.sleep(50);
  }
  return undefined;
}

export async function benchLlHls(service: Service, orgId: string, opts: { runs: number; seconds: number }) {
  const org = (await service.orgs.getOrg(orgId))!;
  const medians: number[] = [];
  const player = await startLlHlsPlayer();
  try {
    for (let run = 1; run <= opts.runs; run++) {
      const s = await service.live.livestreams.create(org, { title: `ll-hls ${run}` });
      const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-stream_loop", "-1", "-i", FIXTURE, "-c", "copy", "-f", "flv", s.context.rtmpUrl], { stdout: "ignore", stderr: "inherit" });
      try {
        await until(async () => ((await fetch(s.context.hlsUrl)).ok ? true : undefined), 30_000);
        const r = await player.watch(s.context.hlsUrl, { seconds: opts.seconds, timeoutMs: opts.seconds * 1000 + 60_000 });
        const m = median(r.latencies);
        medians.push(m);
        console.log(
          `  LL-HLS run ${run}: hls.latency median ${m.toFixed(2)} s (min ${Math.min(...r.latencies).toFixed(2)}, max ${Math.max(...r.latencies).toFixed(2)}, ${r.latencies.length} samples over ${opts.seconds} s); ${r.parts} parts, ${r.segments} whole segments, ${r.blocking} blocking reloads${r.errors.length ? `; errors ${r.errors.join(",")}` : ""}`,
        );
      } finally {
        ff.kill();
        await ff.exited;
        await service.live.ingest.endExplicitly(s.context).catch(() => undefined);
      }
    }
  } finally {
    await player.close();
  }

  const srtDelays: number[] = [];
  for (let run = 1; run <= opts.runs; run++) {
    const s = await service.live.livestreams.create(org, { title: `srt ${run}` });
    const url = service.live.srt.srtUrl(s.context.streamKey);
    if (!url) {
      console.log("  SRT: not listening (libsrt missing?), skipped");
      break;
    }
    let firstPartAt: number | null = null;
    const off = service.live.onPart((id, info) => {
      if (id === s.context.id) firstPartAt ??= info.publishedAtMs;
    });
    const startedAt = Date.now();
    const ff = Bun.spawn(["ffmpeg", "-v", "error", "-re", "-i", FIXTURE, "-c", "copy", "-f", "mpegts", url.replace("//localhost:", "//127.0.0.1:")], { stdout: "ignore", stderr: "inherit" });
    await until(async () => (firstPartAt !== null ? true : undefined), 20_000);
    off();
    if (firstPartAt !== null) srtDelays.push(firstPartAt - startedAt);
    console.log(`  SRT run ${run}: ffmpeg spawned → first LL-HLS part listed ${firstPartAt === null ? "never (20 s)" : `${firstPartAt - startedAt} ms`}`);
    ff.kill();
    await ff.exited;
    await service.live.ingest.endExplicitly(s.context).catch(() => undefined);
  }
  console.log(
    `LL-HLS: hls.js lowLatencyMode latency, median of ${medians.length} run medians: ${median(medians).toFixed(2)} s (target <= 2.0 s); SRT publish → first part: median ${median(srtDelays).toFixed(0)} ms (target < 1000 ms)`,
  );
}
