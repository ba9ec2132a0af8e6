import type { ProbeResult, Rung } from "./types.ts";

const even = (n: number) => Math.max(2, Math.floor(n / 2) * 2);

/**
 * Chooses the rungs to encode for a source: never upscale, always even sizes.
 *
 * - Rungs taller than the source are dropped.
 * - A source shorter than every rung still gets one rung, at its own (even)
 *   height, with the lowest rung's bitrates, named after that height ('240p'),
 *   because a label like '360p' on a 240-line picture would lie to players.
 * - Audio-only sources get no video rungs; the job then makes a single
 *   audio-only HLS rendition instead (see README).
 *
 * Returned rungs are sorted by height ascending and unique by height.
 */
export function planLadder(probe: ProbeResult, ladder: Rung[]): Rung[] {
  if (!probe.hasVideo || ladder.length === 0) return [];
  const sorted = [...ladder].sort((a, b) => a.height - b.height);
  const lowest = sorted[0]!;
  const sourceHeight = probe.height;
  // Without a height we cannot cap safely; the lowest rung is the least wrong.
  if (sourceHeight === null || sourceHeight <= 0) return [{ ...lowest, height: even(lowest.height) }];

  const planned: Rung[] = [];
  for (const rung of sorted) {
    const height = even(rung.height);
    if (height > sourceHeight) continue;
    if (planned.some((p) => p.height === height)) continue;
    planned.push({ ...rung, height });
  }
  if (planned.length > 0) return planned;
  const own = even(sourceHeight);
  return [{ ...lowest, name: `${own}p`, height: own }];
}

/** Width that keeps the source's display aspect ratio at `height`, rounded to even. */
export function widthForHeight(probe: ProbeResult, height: number): number {
  if (!probe.width || !probe.height) return even(Math.round((height * 16) / 9));
  return even(Math.round((probe.width * height) / probe.height / 2) * 2);
}
