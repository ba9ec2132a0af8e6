/**
 * Issue 29 item 1's player check: a frame-counter source (a noisy picture with a flat centre patch whose luma says the frame number modulo 25)
 * and an hls.js page that plays an EVENT playlist from position 0 at 1x to its end, reporting stalls and the
 * frame number it read from every frame shown (requestVideoFrameCallback).
 */
import { readdirSync, readFileSync } from "node:fs";
import { ok } from "./api.ts";
import type { PlayerHarness } from "./browser.ts";
import { waitFor } from "./events.ts";
import type { TestService } from "./test-service.ts";

const PATCH_STEP = 8;
const PATCH_MOD = 25;

/** Writes the source: `seconds` of `size` (e.g. 854x480) at `fps`, a tone, the counter patch in the middle. */
export async function earlySource(output: string, o: { seconds: number; fps: number; size: string }): Promise<void> {
  const { seconds, fps } = o;
  const graph = [
    "[0:v]noise=alls=30:allf=t[bg]",
    `[1:v]format=yuv420p,geq=lum='16+${PATCH_STEP}*mod(N,${PATCH_MOD})':cb=128:cr=128[p]`,
    "[bg][p]overlay=(W-w)/2:(H-h)/2:shortest=1,format=yuv420p[v]",
  ].join(";");
  const args = ["nice", "-n", "5", "ffmpeg", "-v", "error", "-f", "lavfi", "-i", `testsrc2=size=${o.size}:rate=${fps}:duration=${seconds}`];
  args.push("-f", "lavfi", "-i", `color=c=black:size=160x160:rate=${fps}:duration=${seconds}`, "-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`);
  args.push("-filter_complex", graph, "-map", "[v]", "-map", "2:a", "-c:v", "libx264", "-preset", "ultrafast", "-g", String(2 * fps), "-c:a", "aac", "-shortest", "-y", output);
  const p = Bun.spawn(args, { stdout: "ignore", stderr: "pipe" });
  if ((await p.exited) !== 0) throw new Error(`ffmpeg: ${await new Response(p.stderr).text()}`);
}

export interface EarlyPlay {
  ended: boolean;
  currentTime: number;
  /** `waiting` events and hls.js BUFFER_STALLED errors after playback first started. */
  stalls: string[];
  error: string | null;
  frameCount: number;
  /** Frames whose counter is not the one their media time says (after the one constant offset; one frame later allowed): `time:read/expected`. */
  mismatched: string[];
  firstMediaTime: number;
  lastMediaTime: number;
}

/** Plays `url` with hls.js (`startPosition: 0`) in a page of the harness; `onPlaying` runs at the first `playing` event. */
export async function playOnPage(player: PlayerHarness, url: string, o: { timeoutMs: number; onPlaying: () => Promise<void> }): Promise<EarlyPlay> {
  const page = await player.newPage();
  try {
    await page.exposeFunction("earlyPlaying", () => o.onPlaying());
    await page.goto(`${player.origin}/hls-player.html`);
    return await page.evaluate(pagePlay, { url, timeoutMs: o.timeoutMs, fps: 25, step: PATCH_STEP, mod: PATCH_MOD });
  } finally {
    await page.close();
  }
}

/** Runs in the page (no DOM lib here: the page's globals are typed loosely). */
async function pagePlay(a: { url: string; timeoutMs: number; fps: number; step: number; mod: number }): Promise<EarlyPlay> {
  // biome-ignore lint/suspicious/noExplicitAny: the page's globals (hls.js, DOM) are not typed in this tsconfig.
  const g: any = globalThis;
  const video = g.document.getElementById("video");
  const hls = new g.Hls({ startPosition: 0 });
  const canvas = g.document.createElement("canvas");
  canvas.width = 128;
  canvas.height = 72;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  const stalls: string[] = [];
  const frames: Array<[number, number]> = [];
  let error: string | null = null;
  let playing = false;
  video.addEventListener("playing", () => {
    if (playing) return;
    playing = true;
    g.earlyPlaying();
  });
  video.addEventListener("waiting", () => {
    if (playing && !video.ended) stalls.push(`waiting at ${video.currentTime}`);
  });
  const onFrame = (_now: number, meta: { mediaTime: number }) => {
    ctx.drawImage(video, 0, 0, 128, 72);
    const d = ctx.getImageData(62, 34, 4, 4).data;
    let r = 0;
    for (let i = 0; i < d.length; i += 4) r += d[i];
    frames.push([meta.mediaTime, r / (d.length / 4)]);
    if (!video.ended) video.requestVideoFrameCallback(onFrame);
  };
  video.requestVideoFrameCallback(onFrame);
  await new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, a.timeoutMs);
    video.addEventListener("ended", () => {
      clearTimeout(timer);
      resolve();
    });
    hls.on(g.Hls.Events.ERROR, (_e: unknown, d: { details: string; fatal: boolean }) => {
      if (d.details === "bufferStalledError" && playing) stalls.push(`hls.js ${d.details} at ${video.currentTime}`);
      if (d.fatal) {
        error = d.details;
        clearTimeout(timer);
        resolve();
      }
    });
    hls.on(g.Hls.Events.MANIFEST_PARSED, () => video.play().catch((e: Error) => (error = String(e))));
    hls.loadSource(a.url);
    hls.attachMedia(video);
  });
  const [ended, currentTime] = [video.ended, video.currentTime];
  hls.destroy();
  // Limited-range grey: R = (Y - 16) * 255 / 219, and Y = 16 + step * (n mod mod).
  const counter = ([, r]: [number, number]) => Math.round((r * 219) / 255 / a.step);
  const expected = ([t]: [number, number]) => Math.round(t * a.fps) % a.mod;
  const diff = (f: [number, number]) => (((counter(f) - expected(f)) % a.mod) + a.mod) % a.mod;
  const counts = new Map<number, number>();
  for (const f of frames) counts.set(diff(f), (counts.get(diff(f)) ?? 0) + 1);
  const offset = [...counts.entries()].sort((x, y) => y[1] - x[1])[0]?.[0] ?? 0;
  // drawImage copies the frame shown when it runs, which under load may already be the next one: one frame later is read as a match.
  const mismatched = frames.filter((f) => diff(f) !== offset && diff(f) !== (offset + 1) % a.mod).map((f) => `${f[0].toFixed(3)}:${counter(f)}/${(expected(f) + offset) % a.mod}`);
  return {
    ended,
    currentTime,
    stalls,
    error,
    frameCount: frames.length,
    mismatched: mismatched.slice(0, 20),
    firstMediaTime: frames[0]?.[0] ?? Number.NaN,
    lastMediaTime: frames.at(-1)?.[0] ?? Number.NaN,
  };
}

/**
 * The encoder held still between the first playable moment and the player's first frame: this process's ffmpeg
 * children get SIGSTOP (by pid), `resume()` sends SIGCONT. A loaded machine may take seconds to start a browser
 * player; frozen, the job cannot complete meanwhile, so "playback began while TRANSCODING" is checked without a
 * race, and the no-stall check is unchanged (the encode resumes where the player starts, from the state the
 * 1.5x rule judged).
 */
export function freezeEncoder(): { pids: number[]; resume(): void } {
  const pids: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const comm = stat.slice(stat.indexOf("(") + 1, stat.lastIndexOf(")"));
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (comm === "ffmpeg" && ppid === process.pid) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  for (const pid of pids) process.kill(pid, "SIGSTOP");
  let resumed = false;
  return {
    pids,
    resume() {
      if (resumed) return;
      resumed = true;
      for (const pid of pids) {
        try {
          process.kill(pid, "SIGCONT");
        } catch {
          // exited
        }
      }
    },
  };
}

/**
 * Registers the frame-counter source served at `sourceUrl` through `register` and waits, reading through `reader`,
 * for its first `playable` answer; a video that settles before it is playable fails the wait.
 */
export async function registerUntilPlayable(register: TestService, reader: TestService, sourceUrl: string, title: string) {
  const created = await ok(register.api("/videos/", { method: "POST", json: { source_url: sourceUrl, title } }), "createVideo");
  const id = created.data.asset.public_id;
  const early = await waitFor(
    async () => {
      const v = (await ok(reader.api(`/videos/${id}/`), "getVideo")).data.video;
      return v.playable ? v : v.status !== "TRANSCODING" ? Promise.reject(new Error(`settled before playable: ${v.status}`)) : undefined;
    },
    { timeoutMs: 120_000, intervalMs: 50, what: "playable" },
  );
  return { id, early, get: () => ok(reader.api(`/videos/${id}/`), "getVideo") };
}
