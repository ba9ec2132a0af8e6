/**
 * An SRT caller's stream id: `publish:KEY` (what `srt_url` carries, as
 * ffmpeg's `streamid=` and OBS's URL field send it) or SRT's access-control
 * syntax `#!::r=KEY,m=publish`. Anything else is `{ mode: null }`.
 */
export interface SrtStreamId {
  mode: "publish" | "request" | null;
  key: string;
}

export function parseStreamId(raw: string): SrtStreamId {
  const s = raw.replace(/\0+$/, "");
  const simple = /^(publish|request|play):([\w.~-]{1,200})$/.exec(s);
  if (simple) return { mode: simple[1] === "publish" ? "publish" : "request", key: simple[2]! };
  if (s.startsWith("#!::")) {
    const fields = new Map<string, string>();
    for (const part of s.slice(4).split(",")) {
      const eq = part.indexOf("=");
      if (eq > 0) fields.set(part.slice(0, eq), part.slice(eq + 1));
    }
    const key = fields.get("r") ?? "";
    const m = fields.get("m") ?? "request";
    if (/^[\w.~-]{1,200}$/.test(key)) return { mode: m === "publish" ? "publish" : "request", key };
  }
  return { mode: null, key: "" };
}
