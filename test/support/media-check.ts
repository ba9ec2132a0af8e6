import { ALL_FORMATS, BufferSource, Input } from "mediabunny";

/** Parses an m3u8 into its tags and URIs (enough for assertions). */
export function parsePlaylist(text: string) {
  const lines = text
    .split(/\r?\n/)
    .map((l) => l.trim())
    .filter(Boolean);
  const uris: string[] = [];
  const streams: Array<{ attrs: string; uri: string }> = [];
  const durations: number[] = [];
  for (let i = 0; i < lines.length; i++) {
    const l = lines[i]!;
    if (l.startsWith("#EXT-X-STREAM-INF:")) streams.push({ attrs: l, uri: lines[i + 1]! });
    if (l.startsWith("#EXTINF:")) durations.push(Number(l.slice(8).split(",")[0]));
    if (!l.startsWith("#")) uris.push(l);
  }
  return { lines, uris, streams, durations, ended: lines.includes("#EXT-X-ENDLIST"), map: lines.find((l) => l.startsWith("#EXT-X-MAP")) };
}

/** Demuxes media bytes with mediabunny (pure TypeScript): codecs, size, duration. */
export async function inspectMedia(bytes: ArrayBuffer) {
  const input = new Input({ formats: ALL_FORMATS, source: new BufferSource(bytes) });
  const video = await input.getPrimaryVideoTrack();
  const audio = await input.getPrimaryAudioTrack();
  return {
    format: (await input.getFormat()).name,
    videoCodec: video ? await video.codec : null,
    width: video ? video.displayWidth : null,
    height: video ? video.displayHeight : null,
    audioCodec: audio ? await audio.codec : null,
    duration: await input.computeDuration(),
  };
}

/**
 * A live playlist's first whole segment as a player loads it: its init
 * segment (`EXT-X-MAP`, CMAF/LL-HLS) first, then the segment; inspected.
 */
export async function inspectFirstSegment(playlistUrl: string, text: string, init?: RequestInit) {
  const pl = parsePlaylist(text);
  const get = async (uri: string) => new Uint8Array(await (await fetch(new URL(uri, playlistUrl), init)).arrayBuffer());
  const map = /URI="([^"]+)"/.exec(pl.map ?? "")?.[1];
  const parts = [...(map ? [await get(map)] : []), await get(pl.uris[0]!)];
  return inspectMedia(Buffer.concat(parts).buffer as ArrayBuffer);
}
