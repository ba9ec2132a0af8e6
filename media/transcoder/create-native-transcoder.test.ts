import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createNativeTranscoder } from "./create-native-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";
import { SHORT_LADDER, fixture, removeDir, tempOutDir } from "./test-support/fixtures.ts";
import { TranscodeError } from "./transcode-error.ts";

setDefaultTimeout(120_000);

async function ffmpegProcessesFor(dir: string): Promise<number> {
  const ps = Bun.spawn(["ps", "-eo", "args"], { stdout: "pipe" });
  const out = await new Response(ps.stdout).text();
  return out.split("\n").filter((l) => l.startsWith("ffmpeg") && l.includes(dir)).length;
}

describe.skipIf(!hasNativeFfmpeg())("native backend process control", () => {
  test("a timeout kills ffmpeg and rejects with TIMEOUT; an abort with CANCELLED", async () => {
    const t = createNativeTranscoder();
    const outDir = tempOutDir("native-kill");
    try {
      const job = { input: fixture("live-360p-6s.flv"), outDir, ladder: SHORT_LADDER, downloads: [] };
      // -re is not used, so make the run slow enough to catch: x264 'placebo'.
      const slow = createNativeTranscoder({ preset: "placebo" });
      const timedOut = slow.transcode(job, { timeoutMs: 300 }).catch((e: unknown) => e);
      await Bun.sleep(150);
      const err = await timedOut;
      expect(err).toBeInstanceOf(TranscodeError);
      expect((err as TranscodeError).code).toBe("TIMEOUT");
      expect(await ffmpegProcessesFor(outDir)).toBe(0);

      const c = new AbortController();
      const cancelled = slow.transcode(job, { signal: c.signal }).catch((e: unknown) => e);
      setTimeout(() => c.abort(), 200);
      expect(((await cancelled) as TranscodeError).code).toBe("CANCELLED");
      expect(await ffmpegProcessesFor(outDir)).toBe(0);

      // The transcoder is still usable afterwards.
      const r = await t.transcode({ ...job, input: fixture("av-360p-2s.mp4") });
      expect(r.renditions.map((x) => x.quality)).toEqual(["144p", "240p", "360p"]);
      await slow.close();
    } finally {
      await t.close();
      removeDir(outDir);
    }
  }, 120_000);

  test("ffmpeg failures surface as FFMPEG_FAILED with the log tail", async () => {
    const t = createNativeTranscoder({ preset: "no-such-preset" });
    const outDir = tempOutDir("native-fail");
    try {
      const err = await t.transcode({ input: fixture("av-360p-2s.mp4"), outDir, ladder: SHORT_LADDER, downloads: [] }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(TranscodeError);
      expect((err as TranscodeError).code).toBe("FFMPEG_FAILED");
      expect((err as TranscodeError).logTail.join("\n")).toContain("no-such-preset");
    } finally {
      await t.close();
      removeDir(outDir);
    }
  });
});
