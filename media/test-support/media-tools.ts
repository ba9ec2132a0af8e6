/**
 * ffmpeg/ffprobe for tests, as an independent referee and to make test clips.
 *
 * Uses the system's ffmpeg/ffprobe when both are on PATH (CI installs
 * Debian's), otherwise ffmpeg.wasm through media/transcoder's worker pool, so
 * `npm install && npm test` also works on a machine without ffmpeg. Both run
 * the same argument lists and give the same JSON, so a test asserts the same
 * facts either way. `MEDIA_TOOLS=wasm` forces the wasm build (to check this
 * path on a machine that has ffmpeg).
 *
 * Host paths in arguments must be absolute. The wasm core sees only the input
 * file's directory (mounted at /in) and `outDir` (at /out), so name them in
 * `files`; paths in `args` are rewritten the way the transcoder does it, and
 * any other absolute path is refused rather than silently missing.
 *
 * Known differences of the wasm path: ffprobe's exit code is meaningless (the
 * JSON decides, hence `-show_error`); a non-zero ffmpeg exit replaces the
 * worker (the next call reloads the core); and the core keeps ffmpeg's log
 * state between runs, so a message identical to the previous run's last one
 * may read "Last message repeated N times". Compare stderr with '' rather
 * than with message texts.
 *
 * One wasm worker is created lazily and shared (its core takes ~0.5 s to
 * load); idle, it does not keep the process alive. Call `closeMediaTools()`
 * in `afterAll` to free it when a test file is done.
 */
import * as path from "node:path";
import type { FfmpegRunner, RunOutcome, Tool } from "../transcoder/ffmpeg-runner.ts";
import { hasNativeFfmpeg } from "../transcoder/has-native-ffmpeg.ts";
import { createNativeRunner } from "../transcoder/native-runner.ts";
import { createWasmRunner } from "../transcoder/wasm/wasm-runner.ts";
import { createWasmWorkerPool, type WasmWorkerPool } from "../transcoder/wasm/wasm-worker-pool.ts";

export type MediaToolsBackend = "native" | "wasm";

/** Host paths a command reads or writes. */
export interface MediaToolFiles {
  /** A file read by the command; its whole directory is visible (HLS segments next to a playlist). */
  input?: string;
  /** A directory the command writes into. */
  outDir?: string;
}

export interface FfmpegOutcome {
  exitCode: number;
  stdout: string;
  /** Every stderr line, without the wasm core's trailing "Aborted()". */
  stderr: string;
}

/** A command that hangs must not hold a test (and the worker) forever. */
const RUN_TIMEOUT_MS = 120_000;

let backendChoice: MediaToolsBackend | null = null;
let pool: WasmWorkerPool | null = null;

export function mediaToolsBackend(): MediaToolsBackend {
  if (backendChoice) return backendChoice;
  const forced = process.env.MEDIA_TOOLS;
  if (forced === "wasm" || forced === "native") backendChoice = forced;
  else backendChoice = hasNativeFfmpeg() ? "native" : "wasm";
  return backendChoice;
}

/** Frees the shared wasm worker, if one was started; the next call starts another. */
export async function closeMediaTools(): Promise<void> {
  const p = pool;
  pool = null;
  await p?.close();
}

/**
 * `ffprobe -v error -of json -show_error ...args file`, parsed. Throws when
 * ffprobe cannot read the file (native: non-zero exit; both: an `error` object).
 */
export async function ffprobeJson(file: string, args: string[]): Promise<any> {
  const abs = path.resolve(file);
  const out = await run("ffprobe", ["-v", "error", "-of", "json", "-show_error", ...args, abs], { input: abs });
  // The wasm core's ffprobe returns -1 even on success: its JSON decides.
  const failed = mediaToolsBackend() === "native" && out.exitCode !== 0;
  let json: any;
  try {
    json = JSON.parse(out.stdout);
  } catch {
    throw new Error(`ffprobe (${mediaToolsBackend()}) printed no JSON for ${file} (exit ${out.exitCode}): ${out.stderr}`);
  }
  if (failed || json.error) {
    throw new Error(`ffprobe (${mediaToolsBackend()}) failed (${out.exitCode}) on ${file}: ${json.error?.string ?? ""} ${out.stderr}`);
  }
  return json;
}

/** Runs `ffmpeg ...args` (no implicit -y or -nostdin); host paths in args must lie in `files`. */
export function runFfmpeg(args: string[], files: MediaToolFiles = {}): Promise<FfmpegOutcome> {
  return run("ffmpeg", args, files);
}

async function run(tool: Tool, args: string[], files: MediaToolFiles): Promise<FfmpegOutcome> {
  const input = files.input && path.resolve(files.input);
  const outDir = files.outDir && path.resolve(files.outDir);
  const stderr: string[] = [];
  const request = (runner: FfmpegRunner) =>
    runner.run({
      tool,
      args: translateArgs(runner, args, { input, outDir }),
      files: { input, outDir },
      onLine: (line, stream) => {
        if (stream === "stderr") stderr.push(line);
      },
      signal: AbortSignal.timeout(RUN_TIMEOUT_MS),
    });

  let out: RunOutcome;
  if (mediaToolsBackend() === "native") {
    out = await request(createNativeRunner());
  } else {
    pool ??= createWasmWorkerPool({ size: 1 });
    const lease = await pool.acquire();
    try {
      out = await request(createWasmRunner(lease));
    } finally {
      lease.release();
    }
    // The core logs this at the end of every run, successful ones too.
    if (stderr.at(-1) === "Aborted()") stderr.pop();
  }
  return { exitCode: out.exitCode, stdout: out.stdout, stderr: stderr.join("\n") };
}

/** Host paths as the tool sees them: unchanged for native, under /in and /out for wasm. */
function translateArgs(runner: FfmpegRunner, args: string[], files: MediaToolFiles): string[] {
  const seen = runner.toolPaths({ input: files.input ?? "/", outDir: files.outDir ?? "/" });
  // Checked on both backends, so a test that passes with native ffmpeg also runs without it.
  const translated = args.map((arg) => {
    if (!path.isAbsolute(arg)) return arg;
    const abs = path.resolve(arg);
    // The input's whole directory is mounted, so its neighbours are visible too.
    if (files.input && path.dirname(abs) === path.dirname(files.input)) return path.posix.join(path.dirname(seen.input), path.basename(abs));
    if (files.outDir && (abs === files.outDir || abs.startsWith(`${files.outDir}/`))) {
      return path.posix.join(seen.outDir, path.relative(files.outDir, abs));
    }
    throw new Error(`media-tools: ${arg} is not visible to ffmpeg.wasm; pass it (or its directory) in files.input/outDir`);
  });
  return runner.backend === "native" ? args : translated;
}
