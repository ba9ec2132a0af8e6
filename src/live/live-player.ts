import { ALL_FORMATS, BufferSource, Input } from "mediabunny";

/** A file of the broadcast's live HLS folder (`index.m3u8`, a segment) as stored, or null while it is not there. */
export type LiveFileReader = (name: string) => Promise<Uint8Array | null>;

/** The file a playlist line names, relative to the playlist's folder: its last path part, without a query. */
function fileOf(uri: string): string | null {
  const name = uri.split(/[?#]/)[0]!.split("/").pop() ?? "";
  // The names the hls_url route serves, and no others.
  return /^[\w-]+\.(m3u8|ts|m4s|mp4)$/.test(name) ? name : null;
}

/** Why the last look saw nothing playable, for the log line a long wait earns. */
type Pending = "no playlist yet" | "no segment in the playlist" | "segment not stored yet" | "segment has no media" | "store error";

/**
 * The service's own player. It reads what a viewer's GET of `hls_url` is
 * served, from where that route serves it (the object store: the local
 * folder or the bucket), not over HTTP: so a broadcast is known live without
 * reaching our own BASE_URL (issue 24). It reads the playlist, the first
 * segment it names (with its init segment, for CMAF) and demuxes it:
 * LIVESTREAM_STARTED fires on what a viewer could actually play, not on a
 * socket opening. `onSlow` is told once when nothing is playable after
 * `slowMs`, with why.
 */
export async function observePlayback(read: LiveFileReader, opts: { signal: AbortSignal; intervalMs?: number; slowMs?: number; onSlow?: (why: Pending, err?: unknown) => void }): Promise<boolean> {
  const started = performance.now();
  let told = false;
  while (!opts.signal.aborted) {
    let why: Pending = "no playlist yet";
    let error: unknown;
    try {
      const playlist = await read("index.m3u8");
      if (playlist) {
        const lines = new TextDecoder()
          .decode(playlist)
          .split(/\r?\n/)
          .map((l) => l.trim());
        const uri = lines.find((l) => l && !l.startsWith("#"));
        const name = uri ? fileOf(uri) : null;
        why = "no segment in the playlist";
        if (name) {
          const map = /^#EXT-X-MAP:.*URI="([^"]+)"/.exec(lines.find((l) => l.startsWith("#EXT-X-MAP:")) ?? "")?.[1];
          const init = map && fileOf(map) ? await read(fileOf(map)!) : null;
          const segment = await read(name);
          why = "segment not stored yet";
          if (segment && (!map || init)) {
            const bytes = init ? Buffer.concat([init, segment]) : segment;
            const input = new Input({ formats: ALL_FORMATS, source: new BufferSource(bytes) });
            const track = (await input.getPrimaryVideoTrack()) ?? (await input.getPrimaryAudioTrack());
            why = "segment has no media";
            if (track && (await track.computeDuration()) > 0) return true;
          }
        }
      }
    } catch (err) {
      if (opts.signal.aborted) return false;
      why = "store error";
      error = err;
    }
    if (!told && opts.onSlow && performance.now() - started >= (opts.slowMs ?? 15_000)) {
      told = true;
      opts.onSlow(why, error);
    }
    await Bun.sleep(opts.intervalMs ?? 250);
  }
  return false;
}
