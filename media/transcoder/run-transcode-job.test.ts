/** How a job drives its runs, with a scripted runner instead of ffmpeg. */
import { afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import { abortReason } from "./abort-reason.ts";
import type { FfmpegRunner, RunOutcome, RunRequest } from "./ffmpeg-runner.ts";
import { runTranscodeJob } from "./run-transcode-job.ts";
import { WIDE_LADDER, fixture, removeDir, tempOutDir } from "./test-support/fixtures.ts";
import { TranscodeError } from "./transcode-error.ts";

setDefaultTimeout(120_000);

const PROBE = JSON.stringify({
  streams: [
    { codec_type: "video", codec_name: "h264", width: 1920, height: 1080, avg_frame_rate: "25/1" },
    { codec_type: "audio", codec_name: "aac" },
  ],
  format: { format_name: "mov,mp4,m4a,3gp,3g2,mj2", duration: "10.0" },
});

interface Started {
  req: RunRequest;
  finish(out: Partial<RunOutcome>): void;
}

/** ffprobe answers at once; every ffmpeg run waits until the test finishes it (or its signal fires). */
function scriptedRunner() {
  const started: Started[] = [];
  const runner: FfmpegRunner = {
    backend: "native",
    toolPaths: (files) => files,
    run(req) {
      if (req.tool === "ffprobe") return Promise.resolve({ exitCode: 0, stdout: PROBE, stderrTail: [] });
      return new Promise<RunOutcome>((resolve, reject) => {
        req.signal.addEventListener("abort", () => reject(abortReason(req.signal)), { once: true });
        started.push({ req, finish: (out) => resolve({ exitCode: 0, stdout: "", stderrTail: [], ...out }) });
      });
    },
  };
  return { runner, started };
}

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) removeDir(d);
});

function start(signal = new AbortController().signal) {
  const outDir = tempOutDir("job-runs");
  dirs.push(outDir);
  const { runner, started } = scriptedRunner();
  const progress: number[] = [];
  const result = runTranscodeJob(
    { input: fixture("av-360p-2s.mp4"), outDir, ladder: WIDE_LADDER, downloads: [{ rung: "1080p", format: "mkv" }] },
    { runner, signal, onProgress: (p) => progress.push(p), logger: () => {}, transcoderId: "t", preset: "veryfast" },
  ).catch((e: unknown) => e);
  return { started, progress, result };
}

const rungOf = (s: Started) => s.req.args[s.req.args.indexOf("-var_stream_map") + 1]!.split("name:")[1];

describe("runTranscodeJob with one run per rendition", () => {
  test("starts every rendition run at once, costliest first; progress adds up the runs by pixels", async () => {
    const { started, progress } = start();
    await Bun.sleep(20);
    expect(started.map(rungOf)).toEqual(["1080p", "720p", "360p"]);
    expect(started.every((s) => !s.req.signal.aborted)).toBe(true);
    const [r1080, r720, r360] = started as [Started, Started, Started];
    r360.req.onLine?.("out_time_us=10000000", "stdout");
    // 640x360 of (640x360 + 1280x720 + 1920x1080) pixels is 1/14 of the 90 % HLS share.
    expect(progress.at(-1)).toBeCloseTo((90 * 1) / 14, 1);
    r1080.req.onLine?.("out_time_us=5000000", "stdout");
    r720.req.onLine?.("out_time_us=5000000", "stdout");
    expect(progress.at(-1)).toBeCloseTo((90 * (1 + 0.5 * 4 + 0.5 * 9)) / 14, 1);
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
    for (const s of started) s.req.onLine?.("out_time_us=1000000", "stdout");
    for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!);
    for (const s of started) s.finish({ exitCode: 1 });
  });

  test("a failing run stops its siblings; the job fails with that run and no download run starts", async () => {
    const { started, result } = start();
    await Bun.sleep(20);
    const r720 = started.find((s) => rungOf(s) === "720p")!;
    r720.finish({ exitCode: 1, stderrTail: ["x264 ran out of luck"] });
    const err = (await result) as TranscodeError;
    expect(err).toBeInstanceOf(TranscodeError);
    expect(err.code).toBe("FFMPEG_FAILED");
    expect(err.message).toContain("720p");
    expect(err.message).toContain("x264 ran out of luck");
    expect(started.filter((s) => s !== r720).every((s) => s.req.signal.aborted)).toBe(true);
    expect(started).toHaveLength(3);
  });

  test("a timeout stops every run of the job and wins over what it caused", async () => {
    const c = new AbortController();
    const { started, result } = start(c.signal);
    await Bun.sleep(20);
    c.abort(new TranscodeError("TIMEOUT", "transcode exceeded 1 ms"));
    expect(((await result) as TranscodeError).code).toBe("TIMEOUT");
    expect(started).toHaveLength(3);
    expect(started.every((s) => s.req.signal.aborted)).toBe(true);
  });
});
