/**
 * Issue 29 item 1 with STORAGE=s3 (s3rver) and a second service on the same database (sqld) and bucket: while
 * the video is TRANSCODING and playable, either service serves its master, its growing EVENT playlists and every
 * segment they list (stored in the bucket before the playlist naming it); after COMPLETED the playlists are VOD
 * and every segment still there.
 */
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { hasNativeFfmpeg } from "../media/transcoder/index.ts";
import { earlySource, freezeEncoder, registerUntilPlayable } from "./support/early-playback.ts";
import { waitFor } from "./support/events.ts";
import { startS3rver, type S3Server } from "./support/s3rver.ts";
import { startSqld, type Sqld } from "./support/sqld.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

setDefaultTimeout(180_000);

/** The master and each media playlist as `base` serves them, with every listed segment fetched (its status). */
async function servedTree(base: string, masterUrl: string) {
  const url = `${base}${new URL(masterUrl).pathname}`;
  const master = await fetch(url);
  const variants = (await master.text()).split("\n").filter((l) => l.endsWith(".m3u8"));
  const playlists = await Promise.all(
    variants.map(async (v) => {
      const playlistUrl = new URL(v, url).toString();
      const res = await fetch(playlistUrl);
      const text = await res.text();
      const segments = text.split("\n").filter((l) => l.endsWith(".ts"));
      const statuses = await Promise.all(segments.map(async (s) => (await fetch(new URL(s, playlistUrl))).status));
      return { variant: v, cache: res.headers.get("cache-control"), text, segments: segments.length, statuses };
    }),
  );
  return { status: master.status, variants, playlists };
}

describe.skipIf(!hasNativeFfmpeg())("early playback with STORAGE=s3, read through another service", () => {
  let s3: S3Server;
  let sqld: Sqld;
  let a: TestService;
  let b: TestService;
  let files: ReturnType<typeof Bun.serve>;
  const dir = mkdtempSync(join(tmpdir(), "early-s3-"));

  beforeAll(async () => {
    const source = join(dir, "counter.mp4");
    [s3, sqld] = await Promise.all([startS3rver(), startSqld(), earlySource(source, { seconds: 20, fps: 25, size: "854x480" })]);
    files = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response(Bun.file(source)) });
    const env = { ...s3.env, DATABASE_URL: sqld.url, SECRET_KEY: "early-playback-s3-secret-key-0123456789abcdef", MEDIA_BACKEND: "native", TRANSCODE_WORKERS: "1" };
    a = await startTestService({ env });
    b = await startTestService({ env, org: { orgId: a.orgId, apiKey: a.apiKey } });
    const rung = (height: number, videoBitrateKbps: number) => ({ name: `${height}p`, height, videoBitrateKbps, audioBitrateKbps: 64 });
    await a.service.orgs.updateSettings(a.orgId, (s) => ({ ...s, transcoding: { ladder: [rung(360, 800), rung(480, 1500)] } }));
  });

  afterAll(async () => {
    await a?.stop();
    await b?.stop();
    await sqld?.stop();
    await s3?.stop();
    files?.stop(true);
    rmSync(dir, { recursive: true, force: true });
  });

  test("both services serve the growing playlists and every segment they list while TRANSCODING; VOD after COMPLETED", async () => {
    const { early, get } = await registerUntilPlayable(a, b, `http://127.0.0.1:${files.port}/counter.mp4`, "Early S3");
    // Held still while the tree is read (test/support/early-playback.ts), so it is read mid-transcode without a race.
    const frozen = freezeEncoder();
    try {
      expect(frozen.pids.length).toBeGreaterThan(0);
      expect(early.status).toBe("TRANSCODING");
      for (const t of [a, b]) {
        const tree = await servedTree(t.base, early.url!);
        expect(tree.status).toBe(200);
        expect(tree.variants).toEqual(["360p/index.m3u8", "480p/index.m3u8"]);
        for (const p of tree.playlists) {
          expect(p.text).toContain("#EXT-X-PLAYLIST-TYPE:EVENT");
          expect(p.text).not.toContain("#EXT-X-ENDLIST");
          expect(p.cache).toBe("no-cache");
          // Two segments at least (the rule's lead), each stored before the playlist named it.
          expect(p.segments).toBeGreaterThanOrEqual(2);
          expect(p.statuses.every((s) => s === 200)).toBe(true);
        }
      }
    } finally {
      frozen.resume();
    }
    await waitFor(async () => (await get()).data.video.status === "COMPLETED", { timeoutMs: 120_000, what: "COMPLETED" });
    for (const t of [a, b]) {
      const tree = await servedTree(t.base, early.url!);
      expect(tree.variants).toEqual(["360p/index.m3u8", "480p/index.m3u8", "audio-only/index.m3u8"]);
      for (const p of tree.playlists) {
        expect(p.text).toContain("#EXT-X-PLAYLIST-TYPE:VOD");
        expect(p.text).toContain("#EXT-X-ENDLIST");
        expect(p.statuses.every((s) => s === 200)).toBe(true);
      }
    }
  });
});
