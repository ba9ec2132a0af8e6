import { join } from "node:path";
import type { HlsSnapshot } from "../../media/transcoder/index.ts";
import type { Logger } from "../log.ts";
import type { MediaStore } from "../storage/media-store.ts";

/**
 * Issue 29 item 1, early playback, the service's side of the transcoder's `onOutputs` (media/transcoder/early-hls.ts):
 * the growing HLS is stored as it grows, then the video is told it plays. STORAGE=local: the encoder writes in place
 * (the media dir is its out dir, segments renamed into place before the playlist lists them), nothing to copy. Any
 * other store: each new segment is uploaded, then the playlist text that lists it, then (once playable) the master,
 * so a reader on any process never gets a playlist naming a segment not stored yet. `stored` is every key uploaded
 * here, which "store outputs" does not upload again. `playable(url)` is called once, after the master is stored.
 */
export function createEarlyPublisher(o: { store: MediaStore; videoId: string; outDir: string; logger: Logger; playable: (url: string) => Promise<void> }) {
  const { store, videoId, outDir } = o;
  const objects = store.objects;
  const mediaKey = store.mediaKey(videoId);
  const inPlace = objects.localPath(mediaKey) === outDir;
  /** Object key → the bytes stored (segments: their file; playlists: the text last stored). */
  const stored = new Map<string, string>();
  let announced = false;

  async function storeSnapshot(s: HlsSnapshot): Promise<void> {
    for (const p of s.playlists) {
      for (const seg of p.segments) {
        const key = `${mediaKey}/${seg}`;
        if (stored.has(key)) continue;
        await objects.putFile(key, join(outDir, seg), { type: "video/mp2t" });
        stored.set(key, seg);
      }
      const key = `${mediaKey}/${p.file}`;
      if (stored.get(key) === p.text) continue;
      await objects.putBytes(key, p.text, { type: "application/vnd.apple.mpegurl" });
      stored.set(key, p.text);
    }
    if (s.master && !stored.has(`${mediaKey}/${s.master}`)) {
      await objects.putFile(`${mediaKey}/${s.master}`, join(outDir, s.master), { type: "application/vnd.apple.mpegurl" });
      stored.set(`${mediaKey}/${s.master}`, s.master);
    }
  }

  return {
    /** Segment keys stored early (a playlist or master stored early is stored again in its final form). */
    storedSegments: () => new Set([...stored.keys()].filter((k) => k.endsWith(".ts"))),
    async onOutputs(s: HlsSnapshot): Promise<void> {
      if (!inPlace) await storeSnapshot(s);
      if (!s.master || announced) return;
      announced = true;
      await o.playable(store.url(videoId, s.master)).catch((err) => o.logger.warn("Cannot record the video playable", { err, video_id: videoId }));
    },
  };
}

export type EarlyPublisher = ReturnType<typeof createEarlyPublisher>;
