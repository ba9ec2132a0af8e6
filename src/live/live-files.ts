import { appendFile, readFile, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { LiveUrls } from "./live-urls.ts";

/**
 * Where a broadcast lives on disk: its FLV recording (the recording video's
 * source, moved into the library by its transcode) and its live HLS folder
 * (served at hls_url; removed LIVE_FILES_RETENTION_MS after the end by
 * `live-files-remove` work, or at once when the stream is deleted).
 */
export function createLiveFiles(opts: { dataDir: string; urls: LiveUrls }) {
  const flvPath = (id: string) => join(opts.dataDir, "recordings", `${id}.flv`);
  const hlsDir = (id: string) => join(opts.dataDir, "live", opts.urls.token(id));
  return {
    flvPath,
    hlsDir,
    /** When the recording was last written (epoch ms), or null. */
    recordingWrittenAt: (id: string) =>
      stat(flvPath(id)).then(
        (s) => s.mtimeMs,
        () => null,
      ),
    /** A playlist left open by a process that died gets its ENDLIST, so players stop waiting. */
    async closePlaylist(id: string): Promise<void> {
      const playlist = join(hlsDir(id), "index.m3u8");
      const text = await readFile(playlist, "utf8").catch(() => null);
      if (text !== null && !text.includes("#EXT-X-ENDLIST")) await appendFile(playlist, "#EXT-X-ENDLIST\n");
    },
    async removeHls(id: string): Promise<void> {
      await rm(hlsDir(id), { recursive: true, force: true });
    },
  };
}

export type LiveFiles = ReturnType<typeof createLiveFiles>;
