import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fixtureTags } from "../../media/rtmp/test-support.ts";
import { createLogger } from "../log.ts";
import { createBroadcast } from "./broadcast.ts";

setDefaultTimeout(120_000);

const dir = mkdtempSync(join(tmpdir(), "broadcast-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function waitUntil(ok: () => boolean) {
  for (let i = 0; i < 500 && !ok(); i++) await Bun.sleep(20);
  expect(ok()).toBe(true);
}

test("a live HLS store that stalls never holds the publisher: the recording gets every tag, the HLS backlog stays bounded and skips, then resumes at a keyframe", async () => {
  let release!: () => void;
  const stalled = new Promise<void>((r) => (release = r));
  const written: string[] = [];
  const limit = 60_000;
  const broadcast = createBroadcast({
    streamId: "ls_slow",
    latency: "NORMAL",
    flvPath: join(dir, "slow.flv"),
    hlsDir: join(dir, "hls"),
    // A store that takes every upload and answers none until released.
    hlsFiles: {
      prepare: async () => undefined,
      write: async (name) => {
        await stalled;
        written.push(name);
      },
      remove: async () => undefined,
    },
    hlsBacklogBytes: limit,
    logger: createLogger({ level: "silent" }),
    onSegment: () => undefined,
  });
  await broadcast.startSession();
  // 1.9 s of media, within the rebaser's 2 s lead: pushed as fast as the broadcast takes them.
  const tags = (await fixtureTags()).filter((t) => t.timestamp <= 1900);
  const pushed = (async () => {
    for (const tag of tags) await broadcast.push(tag);
    return "all pushed";
  })();
  expect(await Promise.race([pushed, Bun.sleep(20_000).then(() => "publisher held")])).toBe("all pushed");
  expect(broadcast.tagsWritten()).toBe(tags.length);
  const stats = broadcast.hlsStats();
  expect(stats.skips).toBeGreaterThan(0);
  expect(stats.backlogBytes).toBeLessThanOrEqual(limit);
  expect(written).toEqual([]);

  release();
  // Caught up: the next tags from a keyframe on are packaged again (the rebaser holds them to the wall clock).
  await waitUntil(() => broadcast.hlsStats().backlogBytes === 0);
  for (const tag of (await fixtureTags()).filter((t) => t.timestamp > 1900 && t.timestamp <= 3200)) await broadcast.push(tag);
  expect(broadcast.hlsStats().resumes).toBe(broadcast.hlsStats().skips);
  await broadcast.end();
  expect(written).toContain("init.mp4");
  expect(written).toContain("index.m3u8");
  expect(broadcast.hlsStats().backlogBytes).toBe(0);
});
