/**
 * Pure edits that announce a video's transcript to players: a WebVTT
 * subtitle rendition in the HLS master playlist, a text AdaptationSet in the
 * DASH manifest of a DRM video. Text in, text out; the transcode handler
 * writes the files (transcript-outputs.ts).
 */

export const SUBTITLE_GROUP = "subs";

export interface SubtitleTrack {
  /** URI of the rendition's media playlist, relative to the master (e.g. `subs/en/index.m3u8`). */
  uri: string;
  /** BCP 47 language. */
  language: string;
  /** Shown in the player's menu. */
  name: string;
}

/**
 * The master with one `EXT-X-MEDIA:TYPE=SUBTITLES` line (before the first
 * variant) and `SUBTITLES="subs"` on every `EXT-X-STREAM-INF`. Safe to apply
 * twice: an existing subtitle line and attribute are replaced, not repeated.
 * AUTOSELECT=YES lets a player pick it for a viewer whose language matches;
 * DEFAULT=NO: captions stay off until asked for (machine-made text).
 */
export function addSubtitlesToMaster(master: string, track: SubtitleTrack): string {
  const eol = master.includes("\r\n") ? "\r\n" : "\n";
  const media = `#EXT-X-MEDIA:TYPE=SUBTITLES,GROUP-ID="${SUBTITLE_GROUP}",NAME="${track.name.replace(/"/g, "'")}",LANGUAGE="${track.language}",AUTOSELECT=YES,DEFAULT=NO,URI="${track.uri}"`;
  const lines = master.split(/\r?\n/).filter((l) => !(l.startsWith("#EXT-X-MEDIA:") && l.includes("TYPE=SUBTITLES")));
  const firstVariant = lines.findIndex((l) => l.startsWith("#EXT-X-STREAM-INF:"));
  if (firstVariant < 0) throw new Error("The master playlist has no EXT-X-STREAM-INF");
  const out = lines.map((l) => {
    if (!l.startsWith("#EXT-X-STREAM-INF:")) return l;
    const attrs = l.replace(/,SUBTITLES="[^"]*"/, "");
    return `${attrs},SUBTITLES="${SUBTITLE_GROUP}"`;
  });
  out.splice(firstVariant, 0, media);
  return out.join(eol);
}

/**
 * A DASH manifest with one more AdaptationSet, after the last one of the
 * (single) Period: the whole WebVTT file as one Representation addressed by
 * its BaseURL (relative to the manifest), which dash.js and shaka-player read
 * as a side-loaded text track. Clear text: the transcript is served in the
 * clear beside the encrypted media (as `transcript_url` is). Replaces a text
 * AdaptationSet it added before.
 */
export function addTextAdaptationSet(mpd: string, track: { baseUrl: string; language: string; bandwidth?: number }): string {
  const without = mpd.replace(/[ \t]*<AdaptationSet\b[^>]*contentType="text"[^>]*>[\s\S]*?<\/AdaptationSet>[ \t]*\r?\n?/g, "");
  const end = without.lastIndexOf("</Period>");
  if (end < 0) throw new Error("The DASH manifest has no Period");
  const ids = [...without.matchAll(/<(?:AdaptationSet|Representation)\b[^>]*\bid="(\d+)"/g)].map((m) => Number(m[1]));
  const id = ids.length ? Math.max(...ids) + 1 : 0;
  // Pretty-printed (Shaka Packager): a line of its own, indented one step in from `</Period>`; else right before it.
  const lineStart = without.lastIndexOf("\n", end) + 1;
  const ownLine = /^[ \t]*$/.test(without.slice(lineStart, end));
  const at = ownLine ? lineStart : end;
  const inner = ownLine ? `${without.slice(lineStart, end)}  ` : "";
  const xmlText = (s: string) => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/"/g, "&quot;");
  const set = [
    `${inner}<AdaptationSet id="${id}" contentType="text" mimeType="text/vtt" lang="${xmlText(track.language)}">`,
    `${inner}  <Role schemeIdUri="urn:mpeg:dash:role:2011" value="subtitle"/>`,
    `${inner}  <Representation id="${id}" bandwidth="${track.bandwidth ?? 256}">`,
    `${inner}    <BaseURL>${xmlText(track.baseUrl)}</BaseURL>`,
    `${inner}  </Representation>`,
    `${inner}</AdaptationSet>`,
  ].join("\n");
  return `${without.slice(0, at)}${set}${ownLine ? "\n" : ""}${without.slice(at)}`;
}
