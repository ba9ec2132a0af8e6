/**
 * The little MPD handling DRM packaging needs, on the static MPD Shaka
 * Packager writes (one Period; AdaptationSets holding Representations, each
 * with its own SegmentTemplate whose `initialization` is `<rendition>/…`).
 * Not a general XML parser: anything else is reported as unexpected rather
 * than guessed at.
 */
import { PackagingFailedError } from "./errors.ts";

const ADAPTATION_SET = /[ \t]*<AdaptationSet\b[^>]*>[\s\S]*?<\/AdaptationSet>[ \t]*\n?/g;
const REPRESENTATION = /[ \t]*<Representation\b[^>]*>[\s\S]*?<\/Representation>[ \t]*\n?/g;

export interface MpdRepresentation {
  /** First path segment of the SegmentTemplate's `initialization`: the rendition it belongs to. */
  rendition: string;
  contentType: "video" | "audio";
  width: number | null;
  height: number | null;
  /** Relative to the MPD. */
  initialization: string;
  media: string;
}

function attr(tag: string, name: string): string | null {
  const m = new RegExp(`\\s${name}="([^"]*)"`).exec(tag);
  return m ? m[1]! : null;
}

function openTag(block: string): string {
  return block.slice(block.indexOf("<"), block.indexOf(">") + 1);
}

function parseRepresentation(block: string, contentType: "video" | "audio"): MpdRepresentation {
  const init = attr(block, "initialization");
  const media = attr(block, "media");
  if (!init || !media || !init.includes("/")) throw new PackagingFailedError("unexpected MPD: a Representation without a per-rendition SegmentTemplate");
  const tag = openTag(block);
  const width = attr(tag, "width");
  const height = attr(tag, "height");
  return { rendition: init.split("/")[0]!, contentType, width: width ? Number(width) : null, height: height ? Number(height) : null, initialization: init, media };
}

function contentTypeOf(setTag: string, block: string): "video" | "audio" {
  const type = attr(setTag, "contentType") ?? (/mimeType="(video|audio)\//.exec(block)?.[1] as string | undefined);
  if (type !== "video" && type !== "audio") throw new PackagingFailedError(`unexpected MPD: AdaptationSet of type ${type ?? "unknown"}`);
  return type;
}

/** Every Representation of the MPD, in document order. */
export function mpdRepresentations(mpd: string): MpdRepresentation[] {
  const out: MpdRepresentation[] = [];
  for (const set of mpd.match(ADAPTATION_SET) ?? []) {
    const type = contentTypeOf(openTag(set), set);
    for (const rep of set.match(REPRESENTATION) ?? []) out.push(parseRepresentation(rep, type));
  }
  return out;
}

/**
 * The same MPD with only the Representations of `rendition` (its video and
 * its audio). AdaptationSets left empty are dropped; `maxWidth`/`maxHeight`
 * follow what is left. ContentProtection stays on each AdaptationSet, so the
 * result carries the same `cenc:default_KID` and PSSH. Segment URLs are
 * unchanged: the result must live next to the full MPD.
 */
export function renditionMpd(mpd: string, rendition: string): string {
  let kept = 0;
  const out = mpd.replace(ADAPTATION_SET, (set) => {
    const type = contentTypeOf(openTag(set), set);
    const reps = (set.match(REPRESENTATION) ?? []).filter((rep) => parseRepresentation(rep, type).rendition === rendition);
    if (reps.length === 0) return "";
    kept += reps.length;
    let trimmed = set.replace(REPRESENTATION, (rep) => (reps.includes(rep) ? rep : ""));
    const parsed = reps.map((rep) => parseRepresentation(rep, type));
    for (const [name, values] of [
      ["maxWidth", parsed.map((p) => p.width ?? 0)],
      ["maxHeight", parsed.map((p) => p.height ?? 0)],
    ] as const) {
      const tag = openTag(trimmed);
      if (attr(tag, name) !== null) trimmed = trimmed.replace(tag, tag.replace(new RegExp(`(\\s${name}=")[^"]*"`), `$1${Math.max(...values)}"`));
    }
    return trimmed;
  });
  if (kept === 0) throw new PackagingFailedError(`the MPD has no Representation of ${rendition}`);
  return out;
}

/** `mediaPresentationDuration` in seconds (`PT1H2M3.5S`), or null. */
export function mpdDurationSeconds(mpd: string): number | null {
  const value = attr(openTag(mpd.slice(mpd.indexOf("<MPD"))), "mediaPresentationDuration");
  const m = value ? /^PT(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?$/.exec(value) : null;
  if (!m) return null;
  return Number(m[1] ?? 0) * 3600 + Number(m[2] ?? 0) * 60 + Number(m[3] ?? 0);
}

export interface MpdProtection {
  /** `cenc:default_KID` of each AdaptationSet's mp4protection element (UUID form). */
  defaultKids: string[];
  /** `schemeIdUri`s of every ContentProtection element. */
  schemes: string[];
}

/** The ContentProtection elements of an MPD. */
export function mpdProtection(mpd: string): MpdProtection {
  const tags = mpd.match(/<ContentProtection\b[^>]*>/g) ?? [];
  return {
    defaultKids: tags.map((t) => attr(t, "cenc:default_KID")).filter((k): k is string => k !== null),
    schemes: tags.map((t) => attr(t, "schemeIdUri") ?? ""),
  };
}

/** schemeIdUri of the ClearKey DRM system (DASH-IF IOP 4.1 §7.6.2.4): what dash.js reads a ClearKey licence URL for. */
export const CLEARKEY_SYSTEM_SCHEME = "urn:uuid:e2719d58-a985-b3c9-781a-b030af78d30e";

/** A system's ContentProtection (the common system's, or a ClearKey one already there), self-closing or with its PSSH. */
const SYSTEM_ELEMENT =
  /[ \t]*<ContentProtection\b[^>]*schemeIdUri="urn:uuid:(?:1077efec-c0b2-4d02-ace3-3c1e52e2fb4b|e2719d58-a985-b3c9-781a-b030af78d30e)"[^>]*?(?:\/>|>[\s\S]*?<\/ContentProtection>)[ \t]*\n?/g;
const MP4_PROTECTION = /([ \t]*)(<ContentProtection\b[^>]*schemeIdUri="urn:mpeg:dash:mp4protection:2011"[^>]*\/>)[ \t]*\n?/g;

/**
 * The packager's MPD with the ClearKey system's ContentProtection (no PSSH in the MPD) in place of the W3C
 * common-system one, on every protected AdaptationSet (issue 23). dash.js 5 generates a ClearKey request
 * with init data type `keyids` from whatever PSSH the MPD gives its ClearKey system, so a common-system
 * `<cenc:pssh>` made Chromium refuse it (TypeError, dash.js error 113) and a licence URL never worked;
 * with the ClearKey element and no PSSH it builds the `keyids` request from `cenc:default_KID`.
 * shaka-player plays either. The init segments keep the common-system PSSH box (the packager's), which
 * players that read PSSH from the media (the browser's `encrypted` event) use.
 */
export function clearKeyMpd(mpd: string): string {
  const protections = mpd.match(MP4_PROTECTION) ?? [];
  if (protections.length === 0) throw new PackagingFailedError("unexpected MPD: no mp4protection ContentProtection");
  return mpd
    .replace(SYSTEM_ELEMENT, "")
    .replace(MP4_PROTECTION, (_m, indent: string, tag: string) => `${indent}${tag}\n${indent}<ContentProtection schemeIdUri="${CLEARKEY_SYSTEM_SCHEME}" value="ClearKey1.0"/>\n`);
}
