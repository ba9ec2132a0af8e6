/** Just enough HLS media playlist reading for our own output (and for tests). */

export interface MediaPlaylist {
  version: number | null;
  targetDuration: number | null;
  mediaSequence: number;
  endList: boolean;
  map: string | null;
  segments: Array<{ uri: string; duration: number; sequence: number }>;
}

export class PlaylistParseError extends Error {
  override readonly name = "PlaylistParseError";
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`HLS playlist ${field}: ${detail}`);
  }
}

export function parseMediaPlaylist(text: string): MediaPlaylist {
  const lines = text.split(/\r?\n/).map((l) => l.trim());
  if (lines[0] !== "#EXTM3U") throw new PlaylistParseError("#EXTM3U", "missing on the first line");
  const out: MediaPlaylist = { version: null, targetDuration: null, mediaSequence: 0, endList: false, map: null, segments: [] };
  let pendingDuration: number | null = null;
  for (const line of lines.slice(1)) {
    if (line === "") continue;
    if (line.startsWith("#EXT-X-VERSION:")) out.version = Number(line.slice(15));
    else if (line.startsWith("#EXT-X-TARGETDURATION:")) out.targetDuration = Number(line.slice(22));
    else if (line.startsWith("#EXT-X-MEDIA-SEQUENCE:")) out.mediaSequence = Number(line.slice(22));
    else if (line === "#EXT-X-ENDLIST") out.endList = true;
    else if (line.startsWith("#EXT-X-MAP:")) out.map = /URI="([^"]*)"/.exec(line)?.[1] ?? null;
    else if (line.startsWith("#EXTINF:")) {
      pendingDuration = Number.parseFloat(line.slice(8));
      if (!Number.isFinite(pendingDuration)) throw new PlaylistParseError("#EXTINF", `bad duration in "${line}"`);
    } else if (!line.startsWith("#")) {
      if (pendingDuration === null) throw new PlaylistParseError("#EXTINF", `missing before "${line}"`);
      out.segments.push({ uri: line, duration: pendingDuration, sequence: out.mediaSequence + out.segments.length });
      pendingDuration = null;
    }
  }
  return out;
}

/**
 * HLS requires every EXTINF, rounded, to be <= EXT-X-TARGETDURATION. mediabunny's
 * live mode always prints the nominal value, which is false when the encoder's
 * keyframe interval is longer than the segment target (OBS "auto" = ~8 s).
 */
export function withTargetDuration(text: string, seconds: number): string {
  return text.replace(/^#EXT-X-TARGETDURATION:\d+$/m, `#EXT-X-TARGETDURATION:${seconds}`);
}
