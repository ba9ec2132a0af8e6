/**
 * What trackPlayback sends in one batch: the first 20 s of view `n` of `videoId` (ids prefixed `prefix`), from
 * `t0`. Shared by bench:beacons (wrk) and bench/beacons-cpu.ts (CPU per request).
 */
export function beaconBatch(n: number, videoId: string, t0: number, prefix = "bench"): string {
  const event = (type: string, dt: number, more: Record<string, unknown> = {}) => ({
    video_id: videoId,
    view_id: `${prefix}-view-${n}`,
    viewer_id: `${prefix}-viewer-${n}`,
    type,
    t: t0 + dt,
    player_time: dt / 1000,
    ...more,
  });
  return JSON.stringify([
    event("viewstart", 0),
    event("rendition_change", 80, { height: 720, bitrate: 2_500_000 }),
    event("playing", 450, { startup_ms: 450 }),
    event("waiting", 3000),
    event("playing", 3600),
    event("rendition_change", 3700, { height: 480, bitrate: 1_200_000 }),
    event("heartbeat", 10_000),
    event("pause", 12_000),
    event("playing", 14_000),
    event("heartbeat", 20_000),
  ]);
}
