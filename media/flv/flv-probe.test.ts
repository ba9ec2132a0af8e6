import { describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { probeFlvFile } from "./flv-probe.ts";

const FIXTURE = join(import.meta.dir, "../../fixtures/live-360p-6s.flv");

describe("probeFlvFile", () => {
  test("fixture: 640x360 H.264 + AAC 44.1 kHz mono, ~6 s", async () => {
    expect(await probeFlvFile(FIXTURE)).toEqual({
      width: 640,
      height: 360,
      resolution: "640x360",
      videoCodec: "avc1.4d401e",
      audioCodec: "mp4a.40.2",
      audioSampleRate: 44100,
      audioChannels: 1,
      hasVideo: true,
      hasAudio: true,
      durationSeconds: 6.071, // last audio tag; video ends at 5.96
      tags: 414,
    });
  });

  test("a recording cut mid-tag still probes; an empty file gives nulls", async () => {
    const dir = mkdtempSync(join(tmpdir(), "flv-probe-"));
    const bytes = new Uint8Array(await Bun.file(FIXTURE).arrayBuffer());
    writeFileSync(join(dir, "cut.flv"), bytes.subarray(0, 300_001));
    const cut = await probeFlvFile(join(dir, "cut.flv"));
    expect(cut.resolution).toBe("640x360");
    expect(cut.durationSeconds).toBeGreaterThan(1);
    expect(cut.durationSeconds).toBeLessThan(5);
    writeFileSync(join(dir, "empty.flv"), new Uint8Array(0));
    expect(await probeFlvFile(join(dir, "empty.flv"))).toMatchObject({ resolution: null, hasVideo: false, durationSeconds: 0, tags: 0 });
  });
});
