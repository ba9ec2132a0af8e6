/**
 * Issue 29 item 1, early playback: the ladder's HLS is written as EVENT
 * playlists that grow while the encode runs (each segment renamed into place
 * by ffmpeg before the playlist that lists it is renamed over the old one:
 * `-hls_flags temp_file`), so a player can start before the job ends. This
 * file watches those playlists during the HLS stage, decides the first
 * playable moment (the rule below), writes the master playlist then, and
 * hands each growth to the caller (`TranscodeOptions.onOutputs`: the service
 * stores it, e.g. in S3). At the end of the stage each playlist is made the
 * VOD playlist a one-shot job writes (`finalizeMediaPlaylists`).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { HLS_DIR, MASTER_PLAYLIST, mediaPlaylistPath } from "./build-ffmpeg-args.ts";
import { parseMediaPlaylist } from "./hls-playlist.ts";
import type { HlsSnapshot, HlsSnapshotPlaylist, TranscoderLogger } from "./types.ts";

/** How much faster than real time a rung must be produced (measured so far) for a player starting now to never stall. */
export const PLAYABLE_SPEED_FACTOR = 1.5;
/** How often the playlists are read while the encode runs. */
export const WATCH_INTERVAL_MS = 200;

/**
 * The 1.5x rule for one rung: `produced` media seconds listed after `elapsed` wall seconds of its encode, of
 * `total` seconds (null: unknown), segments of `segment` seconds. A player that starts now at position 0 and
 * plays at 1x learns of a new segment only when it reloads the playlist, about one segment's time after the
 * segment is complete (hls.js reloads an EVENT playlist every target duration). So the segment holding
 * position x must be listed one segment before the player reaches x: `produced + v * max(0, x - segment) >=
 * min(x + segment, total)` for every x, where v is the rung's speed assumed from now on: only 1/1.5 of the
 * speed measured so far (the margin). Linear in x on both pieces, it holds when it holds at x = segment (two
 * segments listed, or the whole rung) and at x = total - segment: `produced + v * (total - 2 segment) >=
 * total`. At 1.5x or faster that is any rung with two segments; a slower one becomes playable once enough of
 * it is ahead. Unknown length: two segments at 1.5x or faster.
 */
export function keepsAhead(r: { produced: number; elapsed: number; total: number | null; segment: number }, factor = PLAYABLE_SPEED_FACTOR): boolean {
  const { produced, elapsed, total, segment } = r;
  const eps = 0.01;
  if (!(produced > 0)) return false;
  if (total !== null && produced >= total - eps) return true;
  if (produced < 2 * segment - eps) return false;
  const speed = produced / Math.max(elapsed, 0.001);
  if (total === null) return speed >= factor;
  return produced + (speed / factor) * Math.max(0, total - 2 * segment) >= total - eps;
}

/** One rendition's media playlist as it stands on disk (null: not written yet or not readable whole). */
export function readMediaPlaylist(outDir: string, rendition: string): HlsSnapshotPlaylist | null {
  const file = mediaPlaylistPath(rendition);
  let text: string;
  try {
    text = fs.readFileSync(path.join(outDir, file), "utf8");
  } catch {
    return null;
  }
  try {
    const parsed = parseMediaPlaylist(text);
    const dir = path.posix.dirname(file);
    return { file, text, segments: parsed.segments.map((s) => path.posix.join(dir, s.uri)), seconds: parsed.totalDuration };
  } catch {
    return null;
  }
}

/**
 * The VOD playlist a one-shot job writes: the grown EVENT playlist, complete (ENDLIST), typed VOD. Written
 * to a temporary name and renamed (a reader sees the old or the new one, never a part).
 */
export function finalizeMediaPlaylists(outDir: string, renditions: string[]): void {
  for (const r of renditions) {
    const file = path.join(outDir, mediaPlaylistPath(r));
    if (!fs.existsSync(file)) continue;
    const text = fs.readFileSync(file, "utf8");
    if (!text.includes("#EXT-X-PLAYLIST-TYPE:EVENT")) continue;
    fs.writeFileSync(`${file}.tmp`, text.replace("#EXT-X-PLAYLIST-TYPE:EVENT", "#EXT-X-PLAYLIST-TYPE:VOD"));
    fs.renameSync(`${file}.tmp`, file);
  }
}

export interface HlsWatchOptions {
  outDir: string;
  renditions: string[];
  durationSeconds: number | null;
  segmentSeconds: number;
  /** Writes `hls/master.m3u8` (the whole ladder) when every rung wrote its entry; false: not yet. */
  writeMaster: () => boolean;
  onOutputs?: (snapshot: HlsSnapshot) => Promise<void> | void;
  logger: TranscoderLogger;
  transcoderId: string;
  intervalMs?: number;
}

/**
 * Watches the HLS stage: every `intervalMs` each rendition's playlist is read; when one grew, `onOutputs`
 * gets the snapshot (awaited: the next read waits, so the caller stores growths in order). The first
 * snapshot in which every rung keeps ahead (`keepsAhead`) writes the master and carries it; every later one
 * does too. `stop(true)` (the stage succeeded) reads once more (the last segments; the ladder is playable
 * now whatever the rule said) and resolves after that snapshot was handled; `stop(false)` only ends the watch.
 */
export function watchHls(o: HlsWatchOptions): { stop(succeeded: boolean): Promise<void> } {
  const started = performance.now();
  const seen = new Map<string, string>();
  let master: string | null = null;
  let stopped = false;
  const tick = async (final = false): Promise<void> => {
    const playlists = o.renditions.map((r) => readMediaPlaylist(o.outDir, r));
    const ready = playlists.filter((p): p is HlsSnapshotPlaylist => p !== null);
    if (ready.length === 0) return;
    const elapsed = (performance.now() - started) / 1000;
    // The stage's end: every rung is complete, whatever the probe said its length was.
    const keeps = (p: HlsSnapshotPlaylist) => (final ? p.seconds > 0 : keepsAhead({ produced: p.seconds, elapsed, total: o.durationSeconds, segment: o.segmentSeconds }));
    const ahead = ready.length === o.renditions.length && ready.every(keeps);
    const becamePlayable = !master && ahead && o.writeMaster();
    if (becamePlayable) {
      master = path.posix.join(HLS_DIR, MASTER_PLAYLIST);
      o.logger({ event: "transcode.playable", transcoderId: o.transcoderId, seconds: Math.round(elapsed * 1000) / 1000, produced: ready.map((p) => p.seconds) });
    }
    const grew = ready.some((p) => seen.get(p.file) !== p.text);
    if (!grew && !becamePlayable) return;
    for (const p of ready) seen.set(p.file, p.text);
    await o.onOutputs?.({ playlists: ready, master });
  };
  const safeTick = (final = false) => tick(final).catch((err) => o.logger({ event: "transcode.outputs_failed", transcoderId: o.transcoderId, error: String(err) }));
  const loop = (async () => {
    while (!stopped) {
      await safeTick();
      if (!stopped) await new Promise((r) => setTimeout(r, o.intervalMs ?? WATCH_INTERVAL_MS));
    }
  })();
  return {
    async stop(succeeded) {
      stopped = true;
      await loop;
      if (succeeded) await safeTick(true);
    },
  };
}
