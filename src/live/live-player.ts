import { ALL_FORMATS, BufferSource, Input } from "mediabunny";

/** The service's own player names itself, so the live viewers count (src/ops) leaves it out. */
export const LIVE_CHECK_USER_AGENT = "vidlive-live-check/1";
/** The check's pass through a signed or restricted stream's playback rules (live-urls.ts `checkPass`). */
export const LIVE_CHECK_HEADER = "x-vidlive-live-check";

/**
 * The service's own player: an HTTP client of the public hls_url that fetches
 * the playlist, downloads a segment and demuxes it. LIVESTREAM_STARTED fires on
 * what a viewer could actually play, not on a socket opening.
 */
export async function observePlayback(hlsUrl: string, opts: { signal: AbortSignal; intervalMs?: number; pass?: string }): Promise<boolean> {
  const headers: Record<string, string> = { "user-agent": LIVE_CHECK_USER_AGENT, ...(opts.pass ? { [LIVE_CHECK_HEADER]: opts.pass } : {}) };
  while (!opts.signal.aborted) {
    try {
      const res = await fetch(hlsUrl, { signal: opts.signal, headers });
      if (res.ok) {
        const lines = (await res.text()).split(/\r?\n/).map((l) => l.trim());
        const uri = lines.find((l) => l && !l.startsWith("#"));
        if (uri) {
          const seg = await fetch(new URL(uri, hlsUrl), { signal: opts.signal, headers });
          if (seg.ok) {
            const input = new Input({ formats: ALL_FORMATS, source: new BufferSource(await seg.arrayBuffer()) });
            const track = (await input.getPrimaryVideoTrack()) ?? (await input.getPrimaryAudioTrack());
            if (track) {
              const packet = await track.computeDuration();
              if (packet > 0) return true;
            }
          }
        }
      } else {
        await res.body?.cancel();
      }
    } catch {
      if (opts.signal.aborted) return false;
    }
    await Bun.sleep(opts.intervalMs ?? 250);
  }
  return false;
}
