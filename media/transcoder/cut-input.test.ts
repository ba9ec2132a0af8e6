import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createNativeTranscoder } from "./create-native-transcoder.ts";
import { createWasmTranscoder } from "./create-wasm-transcoder.ts";
import { frameCounterSourceArgs } from "./frame-counter-source.ts";
import type { Transcoder } from "./types.ts";

// Runs ffmpeg (native and wasm workers): a loaded 2-core machine needs more than bun's 5 s default.
setDefaultTimeout(120_000);

/** Issue 27: a clip's cut, frame accurate on both backends. Frame n of the source is flat grey of luma 16 + 10n (10 fps, 2 s, one keyframe). */
let dir: string;

async function run(argv: string[]): Promise<Uint8Array> {
  const p = Bun.spawn(argv, { stdout: "pipe", stderr: "pipe", stdin: "ignore" });
  const [out, err, code] = await Promise.all([new Response(p.stdout).arrayBuffer(), new Response(p.stderr).text(), p.exited]);
  if (code !== 0) throw new Error(err);
  return new Uint8Array(out);
}

/** The frame number of each decoded frame of a file. */
const frames = async (file: string) =>
  [...(await run(["ffmpeg", "-v", "error", "-i", file, "-map", "0:v:0", "-fps_mode", "passthrough", "-vf", "extractplanes=y,scale=1:1:flags=area", "-f", "rawvideo", "-pix_fmt", "gray", "-"]))].map(
    (l) => Math.round((l - 16) / 10),
  );

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "cut-"));
  await run(["ffmpeg", ...frameCounterSourceArgs(join(dir, "source.mp4"), { size: "64x48", fps: 10, seconds: 2, lumaStep: 10 })]);
});

afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.each([
  ["native", () => createNativeTranscoder()],
  ["wasm", () => createWasmTranscoder({ workers: 1 })],
] as const)("Transcoder.cut (%s)", (name, make) => {
  let transcoder: Transcoder;
  beforeAll(() => {
    transcoder = make();
  });
  afterAll(() => transcoder.close());

  test("keeps [start, end) to the frame, from a source with one keyframe; refuses an empty span", async () => {
    const outDir = join(dir, name);
    mkdirSync(outDir);
    const cut = await transcoder.cut({ input: join(dir, "source.mp4"), outDir, start: 0.5, end: 1.2 });
    expect(cut).toBe(join(outDir, "cut.mkv"));
    expect(await frames(cut)).toEqual([5, 6, 7, 8, 9, 10, 11]);
    const probe = await transcoder.probe(cut);
    expect(probe.hasAudio).toBe(true);
    expect(Math.abs((probe.durationSeconds ?? 0) - 0.7)).toBeLessThanOrEqual(0.1);
    await expect(transcoder.cut({ input: join(dir, "source.mp4"), outDir, start: 1, end: 1 })).rejects.toThrow(/start < end/);
  });
});
