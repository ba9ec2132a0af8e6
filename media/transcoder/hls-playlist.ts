/**
 * Just enough m3u8 parsing to measure our own outputs and check them in
 * tests; not a general HLS parser.
 */
export interface MasterVariant {
  uri: string;
  bandwidth: number | null;
  width: number | null;
  height: number | null;
  codecs: string[];
}

export interface MediaPlaylist {
  version: number | null;
  targetDuration: number | null;
  playlistType: string | null;
  endList: boolean;
  independentSegments: boolean;
  segments: Array<{ duration: number; uri: string }>;
  totalDuration: number;
}

function lines(text: string): string[] {
  return text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter((l) => l !== "");
}

/** Splits an attribute list, honouring quoted values that contain commas. */
export function parseAttributes(list: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const m of list.matchAll(/([A-Z0-9-]+)=("[^"]*"|[^,]*)/g)) {
    out[m[1]!] = m[2]!.replace(/^"|"$/g, "");
  }
  return out;
}

export function parseMasterPlaylist(text: string): MasterVariant[] {
  const ls = lines(text);
  if (ls[0] !== "#EXTM3U") throw new Error("not an m3u8 playlist");
  const variants: MasterVariant[] = [];
  for (let i = 0; i < ls.length; i++) {
    const line = ls[i]!;
    if (!line.startsWith("#EXT-X-STREAM-INF:")) continue;
    const attrs = parseAttributes(line.slice("#EXT-X-STREAM-INF:".length));
    const uri = ls[i + 1];
    if (!uri || uri.startsWith("#")) throw new Error("EXT-X-STREAM-INF without a URI");
    const [w, h] = (attrs.RESOLUTION ?? "").split("x").map(Number);
    variants.push({
      uri,
      bandwidth: attrs.BANDWIDTH ? Number(attrs.BANDWIDTH) : null,
      width: w || null,
      height: h || null,
      codecs: attrs.CODECS ? attrs.CODECS.split(",") : [],
    });
  }
  return variants;
}

export function parseMediaPlaylist(text: string): MediaPlaylist {
  const ls = lines(text);
  if (ls[0] !== "#EXTM3U") throw new Error("not an m3u8 playlist");
  const result: MediaPlaylist = {
    version: null,
    targetDuration: null,
    playlistType: null,
    endList: false,
    independentSegments: false,
    segments: [],
    totalDuration: 0,
  };
  let pending: number | null = null;
  for (const line of ls) {
    if (line.startsWith("#EXT-X-VERSION:")) result.version = Number(line.split(":")[1]);
    else if (line.startsWith("#EXT-X-TARGETDURATION:")) result.targetDuration = Number(line.split(":")[1]);
    else if (line.startsWith("#EXT-X-PLAYLIST-TYPE:")) result.playlistType = line.split(":")[1] ?? null;
    else if (line === "#EXT-X-ENDLIST") result.endList = true;
    else if (line === "#EXT-X-INDEPENDENT-SEGMENTS") result.independentSegments = true;
    else if (line.startsWith("#EXTINF:")) pending = Number.parseFloat(line.slice("#EXTINF:".length));
    else if (!line.startsWith("#")) {
      if (pending === null) throw new Error(`segment ${line} without #EXTINF`);
      result.segments.push({ duration: pending, uri: line });
      result.totalDuration += pending;
      pending = null;
    }
  }
  return result;
}

/**
 * Joins master playlists that each list one variant (one per rendition run)
 * into one, in the given order: the first one's header, then every variant
 * entry as written. For the same muxer options this is byte for byte what a
 * single `-var_stream_map` run writes.
 */
export function mergeMasterPlaylists(parts: string[]): string {
  if (parts.length === 0) throw new Error("no master playlists to merge");
  const split = parts.map((text) => {
    const i = text.indexOf("#EXT-X-STREAM-INF:");
    if (!text.startsWith("#EXTM3U") || i < 0) throw new Error("not a master playlist with a variant");
    const body = text.slice(i);
    return { head: text.slice(0, i), body: body.endsWith("\n") ? body : `${body}\n` };
  });
  // The header only carries the version; keep the highest if they ever differ.
  const versionOf = (head: string) => Number(/#EXT-X-VERSION:(\d+)/.exec(head)?.[1] ?? 0);
  const version = Math.max(...split.map((s) => versionOf(s.head)));
  const head = version > 0 ? split[0]!.head.replace(/#EXT-X-VERSION:\d+/, `#EXT-X-VERSION:${version}`) : split[0]!.head;
  return head + split.map((s) => s.body).join("");
}
