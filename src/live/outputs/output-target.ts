/**
 * A simulcast target as given to the API (`url` + optional `stream_key`),
 * turned into what is sent (the URL with its key, sealed at rest) and what is
 * shown (`***` where a key may be). Pure: no I/O.
 *
 * - `rtmp://` / `rtmps://host[:port]/app[/stream name][?query]`: the first path
 *   segment is the application; everything after it (the stream name, a query)
 *   is the platform's key and is never shown. `stream_key` is appended as the
 *   stream name (`…/app/KEY`), as RTMP platforms expect.
 * - `srt://host:port[?params]`: `stream_key` becomes `streamid`; every query
 *   value (streamid, passphrase, …) is shown as `***`.
 */
export interface OutputTarget {
  /** The URL the sender connects to, key included: sealed at rest, never logged or shown. */
  target: string;
  /** The URL as shown (`url` of the output): the key replaced by `***`. */
  shown: string;
  /** The host the outbound guard checks. */
  host: string;
  /** ffmpeg's muxer for the target: FLV over RTMP, MPEG-TS over SRT. */
  format: "flv" | "mpegts";
  /** The secret parts of `target` (key, query values), to scrub from anything the sender reports. */
  secrets: string[];
}

const MAX_URL = 2048;
const MAX_KEY = 1024;
const PRINTABLE = /^[\x21-\x7e]+$/;

export function parseOutputTarget(url: unknown, streamKey?: unknown): { ok: true; value: OutputTarget } | { ok: false; field: "url" | "stream_key"; error: string } {
  const bad = (error: string, field: "url" | "stream_key" = "url") => ({ ok: false as const, field, error });
  if (typeof url !== "string" || url.length === 0 || url.length > MAX_URL || !PRINTABLE.test(url)) return bad(`A URL of at most ${MAX_URL} characters, without spaces: rtmp://, rtmps:// or srt://.`);
  if (streamKey !== undefined && (typeof streamKey !== "string" || streamKey.length === 0 || streamKey.length > MAX_KEY || !PRINTABLE.test(streamKey))) {
    return bad(`A key of 1 to ${MAX_KEY} printable characters, without spaces.`, "stream_key");
  }
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return bad("Not a URL: rtmp://host/app/key, rtmps://… or srt://host:port.");
  }
  if (u.username || u.password) return bad("No credentials in the URL: give the key as stream_key.");
  if (!u.hostname) return bad("The URL needs a host.");
  const host = u.hostname.replace(/^\[|\]$/g, "");
  if (u.protocol === "rtmp:" || u.protocol === "rtmps:") return rtmpTarget(u, url, host, streamKey as string | undefined, bad);
  if (u.protocol === "srt:") return srtTarget(u, host, streamKey as string | undefined, bad);
  return bad("Only rtmp://, rtmps:// and srt:// targets are supported.");
}

function rtmpTarget(u: URL, raw: string, host: string, streamKey: string | undefined, bad: (e: string) => { ok: false; field: "url" | "stream_key"; error: string }) {
  // WHATWG URL does not know rtmp's default port; the path is read from the raw text (no percent-encoding added).
  const afterHost = raw.slice(raw.indexOf("//") + 2);
  const slash = afterHost.indexOf("/");
  const path = slash < 0 ? "" : afterHost.slice(slash + 1);
  const appEnd = path.search(/[/?]/);
  const app = appEnd < 0 ? path : path.slice(0, appEnd);
  if (!app) return bad("An RTMP target needs an application: rtmp://host/app (the key after it or as stream_key).");
  const rest = appEnd < 0 ? "" : path.slice(appEnd).replace(/^\//, "");
  const base = `${u.protocol}//${u.host}/${app}`;
  const secrets = [rest, streamKey].filter((s): s is string => !!s);
  const name = [rest, streamKey].filter(Boolean).join(rest && streamKey && !rest.endsWith("/") ? "/" : "");
  return {
    ok: true as const,
    value: { target: name ? `${base}/${name}` : base, shown: name ? `${base}/***` : base, host, format: "flv" as const, secrets },
  };
}

function srtTarget(u: URL, host: string, streamKey: string | undefined, bad: (e: string) => { ok: false; field: "url" | "stream_key"; error: string }) {
  if (!u.port) return bad("An SRT target needs a port: srt://host:port.");
  if (u.pathname && u.pathname !== "/") return bad("An SRT target has no path: srt://host:port?streamid=….");
  const params = new URLSearchParams(u.search);
  if (streamKey !== undefined) {
    if (params.has("streamid")) return bad("Give the key either as streamid in the URL or as stream_key, not both.");
    params.set("streamid", streamKey);
  }
  const query = [...params].map(([k, v]) => `${encodeURIComponent(k)}=${encodeURIComponent(v)}`).join("&");
  const shown = [...params].map(([k]) => `${encodeURIComponent(k)}=***`).join("&");
  const base = `srt://${u.host}`;
  const secrets = [...params.values()].filter((v) => v.length > 0);
  return { ok: true as const, value: { target: query ? `${base}?${query}` : base, shown: shown ? `${base}?${shown}` : base, host, format: "mpegts" as const, secrets } };
}

/** `text` with every secret of the target (and the target itself) replaced: for errors reported by the sender. */
export function scrubTarget(text: string, t: Pick<OutputTarget, "target" | "shown" | "secrets">): string {
  let out = text.split(t.target).join(t.shown);
  for (const s of [...t.secrets].sort((a, b) => b.length - a.length)) {
    if (s.length >= 3) out = out.split(s).join("***").split(encodeURIComponent(s)).join("***");
  }
  return out;
}
