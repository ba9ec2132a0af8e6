/** LL-HLS media playlists (RFC 8216bis): written by ll-hls-packager.ts, read back for blocking reloads. */

export interface LlPart {
  uri: string;
  duration: number;
  /** Starts on a keyframe. */
  independent: boolean;
}

export interface LlSegment {
  uri: string;
  sequence: number;
  duration: number;
  parts: LlPart[];
  /** Starts a discontinuity (a broadcast taken over by another process: new encoder session, new init segment). */
  discontinuity?: boolean;
  /** Its init segment (EXT-X-MAP); `init.mp4` when absent. */
  map?: string;
}

const sec = (n: number) => n.toFixed(3);

/**
 * The whole playlist: complete segments (EXTINF, so players without LL-HLS
 * play them as before), the parts of the last ones (EXT-X-PART), the parts of
 * the open segment, and a hint of the next part (EXT-X-PRELOAD-HINT).
 * PART-HOLD-BACK is three part targets, the spec's minimum.
 */
export function renderLlPlaylist(p: {
  targetDuration: number;
  partTarget: number;
  segments: LlSegment[];
  /** Index in `segments` from which the parts are listed. */
  partsFrom: number;
  openParts: LlPart[];
  /** Media sequence number of the open segment. */
  openMsn: number;
  ended: boolean;
  /** Discontinuities that left the window (EXT-X-DISCONTINUITY-SEQUENCE). */
  discontinuitySequence?: number;
  /** The init segment of the open segment (and of segments without `map`). */
  initUri?: string;
  /** The open segment starts a discontinuity. */
  openDiscontinuity?: boolean;
  /** File name prefix of the open segment's parts (a taken-over broadcast's files never reuse the dead owner's names). */
  partPrefix?: string;
}): string {
  const partLine = (x: LlPart) => `#EXT-X-PART:DURATION=${sec(x.duration)},URI="${x.uri}"${x.independent ? ",INDEPENDENT=YES" : ""}`;
  const lines = [
    "#EXTM3U",
    "#EXT-X-VERSION:9",
    `#EXT-X-TARGETDURATION:${p.targetDuration}`,
    `#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=${sec(p.partTarget * 3)}`,
    `#EXT-X-PART-INF:PART-TARGET=${sec(p.partTarget)}`,
    `#EXT-X-MEDIA-SEQUENCE:${p.segments[0]?.sequence ?? p.openMsn}`,
  ];
  if (p.discontinuitySequence) lines.push(`#EXT-X-DISCONTINUITY-SEQUENCE:${p.discontinuitySequence}`);
  const initUri = p.initUri ?? "init.mp4";
  let map = p.segments[0]?.map ?? initUri;
  lines.push(`#EXT-X-MAP:URI="${map}"`);
  const join = (next: string) => {
    lines.push("#EXT-X-DISCONTINUITY");
    if (next !== map) lines.push(`#EXT-X-MAP:URI="${next}"`);
    map = next;
  };
  p.segments.forEach((s, i) => {
    if (s.discontinuity) join(s.map ?? initUri);
    if (i >= p.partsFrom) for (const x of s.parts) lines.push(partLine(x));
    lines.push(`#EXTINF:${sec(s.duration)},`, s.uri);
  });
  if (p.ended) lines.push("#EXT-X-ENDLIST");
  else {
    if (p.openDiscontinuity && p.segments.length > 0) join(initUri);
    for (const x of p.openParts) lines.push(partLine(x));
    lines.push(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="${p.partPrefix ?? ""}part-${p.openMsn}-${p.openParts.length}.m4s"`);
  }
  return `${lines.join("\n")}\n`;
}

/**
 * The segments of a stored LL-HLS playlist (one a dead owner left), so the
 * process taking its broadcast over continues it: their sequence numbers,
 * durations, parts, discontinuities and init segments; open parts after the
 * last complete segment are left out (their segment was never finished).
 */
export function parseLlPlaylist(text: string): { segments: LlSegment[]; discontinuitySequence: number; ended: boolean } {
  let sequence = 0;
  let discontinuitySequence = 0;
  let map = "init.mp4";
  let duration = 0;
  let parts: LlPart[] = [];
  let discontinuity = false;
  let ended = false;
  const segments: LlSegment[] = [];
  const attr = (line: string, name: string) => {
    const m = new RegExp(`[:,]${name}=(?:"([^"]*)"|([^,]*))`).exec(line);
    return m ? (m[1] ?? m[2]) : undefined;
  };
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#EXT-X-MEDIA-SEQUENCE:")) sequence = Number(line.slice(22));
    else if (line.startsWith("#EXT-X-DISCONTINUITY-SEQUENCE:")) discontinuitySequence = Number(line.slice(30));
    else if (line === "#EXT-X-DISCONTINUITY") discontinuity = true;
    else if (line.startsWith("#EXT-X-MAP:")) map = attr(line, "URI") ?? map;
    else if (line.startsWith("#EXTINF:")) duration = Number.parseFloat(line.slice(8));
    else if (line.startsWith("#EXT-X-PART:")) parts.push({ uri: attr(line, "URI") ?? "", duration: Number.parseFloat(attr(line, "DURATION") ?? "0"), independent: line.includes("INDEPENDENT=YES") });
    else if (line === "#EXT-X-ENDLIST") ended = true;
    else if (line && !line.startsWith("#")) {
      segments.push({ uri: line, sequence: sequence + segments.length, duration, parts, map, ...(discontinuity ? { discontinuity } : {}) });
      parts = [];
      discontinuity = false;
    }
  }
  return { segments, discontinuitySequence, ended };
}

/** Where a live playlist stands: its last complete segment, the parts of the open one after it, whether it ended. */
export interface PlaylistEdge {
  /** Media sequence number of the last complete segment (-1: none yet). */
  lastMsn: number;
  /** Parts listed after the last complete segment (those of segment lastMsn + 1). */
  openParts: number;
  ended: boolean;
  targetDuration: number;
}

export function playlistEdge(text: string): PlaylistEdge {
  let sequence = 0;
  let segments = 0;
  let openParts = 0;
  let ended = false;
  let targetDuration = 0;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line.startsWith("#EXT-X-MEDIA-SEQUENCE:")) sequence = Number(line.slice(22));
    else if (line.startsWith("#EXT-X-TARGETDURATION:")) targetDuration = Number(line.slice(22));
    else if (line.startsWith("#EXT-X-PART:")) openParts++;
    else if (line === "#EXT-X-ENDLIST") ended = true;
    else if (line && !line.startsWith("#")) {
      segments++;
      openParts = 0;
    }
  }
  return { lastMsn: sequence + segments - 1, openParts, ended, targetDuration };
}

/**
 * A blocking reload's answer (RFC 8216bis 6.2.5.2): `ready` once the playlist
 * holds segment `msn` whole or its part `part`; `bad` (400) when `msn` is more
 * than two segments past the last one, or `part` more than three parts past
 * the last part of the open segment; otherwise `wait`.
 */
export function blockingVerdict(edge: PlaylistEdge, msn: number, part: number | null): "ready" | "wait" | "bad" {
  if (edge.ended) return "ready";
  if (msn <= edge.lastMsn) return "ready";
  if (msn > edge.lastMsn + 2) return "bad";
  if (msn === edge.lastMsn + 1 && part !== null) {
    if (part < edge.openParts) return "ready";
    if (part > edge.openParts + 3) return "bad";
  }
  return "wait";
}
