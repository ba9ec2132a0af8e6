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
}): string {
  const partLine = (x: LlPart) => `#EXT-X-PART:DURATION=${sec(x.duration)},URI="${x.uri}"${x.independent ? ",INDEPENDENT=YES" : ""}`;
  const lines = [
    "#EXTM3U",
    "#EXT-X-VERSION:9",
    `#EXT-X-TARGETDURATION:${p.targetDuration}`,
    `#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=${sec(p.partTarget * 3)}`,
    `#EXT-X-PART-INF:PART-TARGET=${sec(p.partTarget)}`,
    `#EXT-X-MEDIA-SEQUENCE:${p.segments[0]?.sequence ?? p.openMsn}`,
    '#EXT-X-MAP:URI="init.mp4"',
  ];
  p.segments.forEach((s, i) => {
    if (i >= p.partsFrom) for (const x of s.parts) lines.push(partLine(x));
    lines.push(`#EXTINF:${sec(s.duration)},`, s.uri);
  });
  if (p.ended) lines.push("#EXT-X-ENDLIST");
  else {
    for (const x of p.openParts) lines.push(partLine(x));
    lines.push(`#EXT-X-PRELOAD-HINT:TYPE=PART,URI="part-${p.openMsn}-${p.openParts.length}.m4s"`);
  }
  return `${lines.join("\n")}\n`;
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
