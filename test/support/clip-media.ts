import { ok } from "./api.ts";
import { waitFor } from "./events.ts";
import type { TestService } from "./test-service.ts";

/**
 * For tests of clips (issue 27): tools run without blocking the test process (the service under test answers
 * their requests), decoded frames as mean lumas, and waiting for a video to settle.
 */

/** Runs a tool to its end; its stdout, or throws with its stderr. */
export async function run(argv: string[]): Promise<Uint8Array> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(`${argv.join(" ")}: ${err}`);
  return new Uint8Array(out);
}

export const ffmpeg = (args: string[]) => run(["ffmpeg", "-hide_banner", "-loglevel", "error", ...args]);

/** Each decoded frame of a playlist as its mean luma (scaled to one pixel by area). */
export const lumas = async (playlistUrl: string) => [
  ...(await ffmpeg(["-i", playlistUrl, "-map", "0:v:0", "-fps_mode", "passthrough", "-vf", "extractplanes=y,scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "gray", "-"])),
];

/** ffprobe's duration of a file or playlist, in seconds. */
export const probeDuration = async (url: string) =>
  Number(JSON.parse(new TextDecoder().decode(await run(["ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "json", url]))).format.duration);

/** `GET /videos/{id}/`'s data, waiting for it to leave TRANSCODING, and for COMPLETED (throws on ERROR). */
export function videoWaiters(t: () => TestService) {
  const video = async (id: string, key?: string) => (await ok(t().api(`/videos/${id}/`, { key }), "getVideo")).data;
  const settled = (id: string, key?: string) =>
    waitFor(
      async () => {
        const v = await video(id, key);
        return v.video.status === "TRANSCODING" ? null : v;
      },
      { timeoutMs: 180_000, intervalMs: 300, what: `video ${id} to settle` },
    );
  const completed = async (id: string) => {
    const v = await settled(id);
    if (v.video.status !== "COMPLETED") throw new Error(`transcode failed: ${JSON.stringify(v.error)}`);
    return v;
  };
  return { video, settled, completed };
}
