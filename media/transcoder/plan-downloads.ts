import type { DownloadFormat, DownloadSpec, Rung } from "./types.ts";

export interface PlannedDownload {
  /** Name of the produced rendition the file is made from. */
  rendition: string;
  format: DownloadFormat;
  /** The rung the organization asked for (may differ after fallback). */
  requested: string;
}

/**
 * Maps requested downloads onto the renditions actually produced.
 *
 * A request for a rung that was dropped because the source is smaller falls
 * back to the tallest produced rendition not above it: an organization that
 * enables 1080p downloads still gets a file from a 720p upload. Requests for
 * names not in the ladder at all are ignored. At most one download per
 * rendition (the first request wins), since an asset has one file per quality.
 * An audio-only job has a single rendition, 'audio', which takes the first
 * request's format.
 */
export function planDownloads(specs: DownloadSpec[], ladder: Rung[], produced: Array<{ name: string; height: number }>): { planned: PlannedDownload[]; ignored: DownloadSpec[] } {
  const planned: PlannedDownload[] = [];
  const ignored: DownloadSpec[] = [];
  const taken = new Set<string>();
  for (const spec of specs) {
    const target = pick(spec, ladder, produced);
    if (!target || taken.has(target)) {
      ignored.push(spec);
      continue;
    }
    taken.add(target);
    planned.push({ rendition: target, format: spec.format, requested: spec.rung });
  }
  return { planned, ignored };
}

function pick(spec: DownloadSpec, ladder: Rung[], produced: Array<{ name: string; height: number }>): string | null {
  if (produced.length === 1 && produced[0]!.name === "audio") return "audio";
  const exact = produced.find((p) => p.name === spec.rung);
  if (exact) return exact.name;
  const asked = ladder.find((r) => r.name === spec.rung);
  if (!asked) return null;
  const below = produced.filter((p) => p.height <= asked.height).sort((a, b) => b.height - a.height);
  return below[0]?.name ?? null;
}
