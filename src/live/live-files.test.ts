import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createLiveHlsPackager, LIVE_HLS_LATENCY_PRESETS } from "../../media/hls/live-hls-packager.ts";
import { fixtureTags } from "../../media/rtmp/test-support.ts";
import { type S3Server, startS3rver } from "../../test/support/s3rver.ts";
import { parsePlaylist } from "../../test/support/media-check.ts";
import { loadConfig } from "../config.ts";
import { loadServerSecret } from "../secrets/server-secret.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import { createS3ObjectStore } from "../storage/s3-object-store.ts";
import { createLiveFiles } from "./live-files.ts";
import { createLiveUrls } from "./live-urls.ts";

setDefaultTimeout(120_000);

/**
 * The live HLS of STORAGE=s3: the real packager on the fixture, its files
 * uploaded to a real s3rver bucket. The store is the real one, observed (not
 * replaced): at each playlist upload, every segment it names must already be
 * in the bucket.
 */

let s3: S3Server;
let dataDir: string;
beforeAll(async () => {
  s3 = await startS3rver();
  dataDir = mkdtempSync(join(tmpdir(), "live-files-"));
});
afterAll(async () => {
  await s3.stop();
  rmSync(dataDir, { recursive: true, force: true });
});

/** The real bucket, with every playlist upload checked against what is already stored. */
function observedStore(real: ObjectStore, violations: string[], writes: string[]): ObjectStore {
  return {
    ...real,
    async putBytes(key, data, opts) {
      if (key.endsWith("/index.m3u8")) {
        const text = typeof data === "string" ? data : new TextDecoder().decode(data);
        const prefix = key.slice(0, key.lastIndexOf("/"));
        const pl = parsePlaylist(text);
        const named = [...pl.uris, ...(pl.map ? [/URI="([^"]+)"/.exec(pl.map)![1]!] : [])];
        for (const uri of named) if ((await real.stat(`${prefix}/${uri}`)) === null) violations.push(`${uri} named before it was stored`);
      }
      writes.push(key.slice(key.lastIndexOf("/") + 1));
      return real.putBytes(key, data, opts);
    },
  };
}

describe("live HLS into the object store", () => {
  for (const segmentFormat of ["mpegts", "cmaf"] as const) {
    test(`${segmentFormat}: each segment is uploaded before the playlist naming it; nothing is written on local disk; ENDLIST at the end`, async () => {
      const real = createS3ObjectStore({ endpoint: s3.endpoint, bucket: s3.bucket, accessKeyId: "S3RVER", secretAccessKey: "S3RVER", region: "us-east-1" });
      const violations: string[] = [];
      const writes: string[] = [];
      const objects = observedStore(real, violations, writes);
      const config = loadConfig({ DATA_DIR: dataDir });
      const files = createLiveFiles({ dataDir, urls: createLiveUrls(config, loadServerSecret(dataDir)), objects });
      const id = `liv_${segmentFormat}`;
      const prefix = files.hlsPrefix(id);
      // A previous broadcast's leftovers are not served as this one's.
      await real.putBytes(`${prefix}/index.m3u8`, "#EXTM3U\n#EXT-X-ENDLIST\n");

      const packager = createLiveHlsPackager({ dir: files.hlsDir(id), files: files.hlsSink(id), segmentFormat, ...LIVE_HLS_LATENCY_PRESETS.LOW, windowSegments: 2, graceSegments: 1 });
      for (const tag of await fixtureTags()) await packager.push(tag);
      await packager.end();

      expect(violations).toEqual([]);
      expect(writes.filter((w) => w === "index.m3u8").length).toBeGreaterThan(2);
      if (segmentFormat === "cmaf") expect(writes.indexOf("init.mp4")).toBeLessThan(writes.indexOf("index.m3u8"));
      expect(existsSync(join(dataDir, "live"))).toBe(false);
      const playlist = parsePlaylist(await new Response(real.body(`${prefix}/index.m3u8`)).text());
      expect(playlist.ended).toBe(true);
      // Segments that left the window (and their grace) were deleted from the bucket too.
      const stored: string[] = [];
      for await (const o of real.list(prefix)) stored.push(o.key.slice(prefix.length + 1));
      const segments = stored.filter((k) => k.startsWith("segment-"));
      expect(segments.length).toBeLessThan(packager.info().segments);
      for (const uri of playlist.uris) expect(stored).toContain(uri);

      const stats = files.takeUploadStats(id)!;
      expect(stats.files).toBe(writes.length);
      // The figure for src/live/README.md (not asserted: timings vary by machine).
      console.log(`[live-files] ${segmentFormat}: ${stats.files} uploads, avg ${(stats.totalMs / stats.files).toFixed(1)} ms, max ${stats.maxMs.toFixed(1)} ms`);

      await files.removeHls(id);
      const left: string[] = [];
      for await (const o of real.list(prefix)) left.push(o.key);
      expect(left).toEqual([]);
    }, 120_000);
  }
});
