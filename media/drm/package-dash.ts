/**
 * Packages per-rendition MP4s into encrypted DASH with Shaka Packager: raw-key
 * CENC (`cenc` scheme, AES-CTR), the W3C common-system PSSH, every segment
 * encrypted (`--clear_lead 0`), a static MPD. One run writes every
 * rendition's segments and `manifest.mpd`; each `<rendition>.mpd` is derived
 * from it (mpd.ts), which measured cheaper than a packager run per rendition
 * (README).
 *
 * The key reaches the packager on stdin as a flag file (`--flagfile=/dev/stdin`),
 * never in its argv (visible in `ps` and /proc) nor in a file on disk; its log
 * is scrubbed of the key before it goes into an error.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { checkDrmKey, type DrmKey } from "./drm-key.ts";
import { PackagerUnavailableError, PackagingFailedError } from "./errors.ts";
import { clearKeyMpd, mpdDurationSeconds, mpdRepresentations, renditionMpd } from "./mpd.ts";
import { packagerBinary } from "./packager-binary.ts";

export const MANIFEST = "manifest.mpd";

export interface DashInput {
  /** Rendition name ([A-Za-z0-9_-]): its segments go to `<outDir>/<name>/`, its own MPD is `<outDir>/<name>.mpd`. */
  name: string;
  /** Absolute path of an MP4 holding the rendition (H.264 and/or AAC). */
  file: string;
  video: boolean;
  audio: boolean;
}

export interface PackageDashOptions {
  /** In ladder order; the MPDs list them in this order. */
  inputs: DashInput[];
  /** Absolute directory for the MPDs and segments; created if missing. */
  outDir: string;
  drm: DrmKey;
  /** Target segment length; the inputs should have keyframes on these boundaries. */
  segmentSeconds: number;
  /** Aborting kills the packager; the call then rejects with `signal.reason`. */
  signal?: AbortSignal;
  /** Default: npm shaka-packager's binary for this platform. */
  packager?: string;
  /** Rewrites the command line before spawning (e.g. to make the child die with this process). */
  wrapArgv?: (argv: string[]) => string[];
}

export interface PackagedDash {
  /** Relative to outDir: `manifest.mpd`. */
  manifest: string;
  /** Each input's own MPD, relative to outDir (`<name>.mpd`), in input order. */
  renditions: { name: string; mpd: string }[];
  /** The MPD's mediaPresentationDuration. */
  durationSeconds: number | null;
  /** Wall time of the packager run and the derived MPDs. */
  packagingMs: number;
  /** CPU time (user + system) of the packager process. */
  packagerCpuMs: number;
}

const SAFE_NAME = /^[A-Za-z0-9_-]+$/;
const TAIL_LINES = 40;

/** The packager's arguments (without the key, which goes on stdin); paths relative to outDir, its working directory. */
export function buildPackagerArgs(opts: Pick<PackageDashOptions, "inputs" | "outDir" | "segmentSeconds">): string[] {
  const args: string[] = [];
  for (const input of opts.inputs) {
    if (!SAFE_NAME.test(input.name)) throw new PackagingFailedError(`bad rendition name for packaging: ${JSON.stringify(input.name)}`);
    // Stream descriptors are comma- and '='-separated, so the input path must not contain either.
    const file = path.relative(opts.outDir, input.file);
    if (/[,=]/.test(file)) throw new PackagingFailedError(`packager input path must not contain ',' or '=': ${file}`);
    for (const stream of ["video", "audio"] as const) {
      if (!input[stream]) continue;
      args.push(`in=${file},stream=${stream},init_segment=${input.name}/${stream}-init.mp4,segment_template=${input.name}/${stream}-$Number%05d$.m4s`);
    }
  }
  args.push(
    "--protection_scheme",
    "cenc",
    "--protection_systems",
    "CommonSystem",
    // Default is 5 s in clear; every segment is encrypted instead.
    "--clear_lead",
    "0",
    "--segment_duration",
    String(opts.segmentSeconds),
    // segment_template alone makes a dynamic (live) MPD.
    "--generate_static_live_mpd",
    "--mpd_output",
    MANIFEST,
    "--flagfile=/dev/stdin",
  );
  return args;
}

/** One key for every stream (video and audio), no DRM label. */
function keyFlags(drm: DrmKey): string {
  return `--enable_raw_key_encryption\n--keys=key_id=${drm.keyId}:key=${drm.key}\n`;
}

export async function packageDash(opts: PackageDashOptions): Promise<PackagedDash> {
  const started = performance.now();
  const drm = checkDrmKey(opts.drm);
  if (opts.inputs.length === 0) throw new PackagingFailedError("nothing to package");
  const bin = opts.packager ?? packagerBinary();
  const args = buildPackagerArgs(opts);
  fs.mkdirSync(opts.outDir, { recursive: true });
  const scrub = (line: string) => line.split(drm.key).join("<key>");

  if (opts.signal?.aborted) throw opts.signal.reason;
  const argv = [bin, ...args];
  let proc: Bun.Subprocess<Uint8Array, "pipe", "pipe">;
  try {
    proc = Bun.spawn(opts.wrapArgv ? opts.wrapArgv(argv) : argv, { cwd: opts.outDir, stdin: new TextEncoder().encode(keyFlags(drm)), stdout: "pipe", stderr: "pipe" });
  } catch (e) {
    throw new PackagerUnavailableError(`cannot start Shaka Packager (${bin}): ${(e as Error).message}`);
  }
  const kill = () => proc.kill("SIGKILL");
  opts.signal?.addEventListener("abort", kill, { once: true });
  let exitCode: number;
  let log: string[];
  try {
    const [out, err] = await Promise.all([new Response(proc.stdout).text(), new Response(proc.stderr).text()]);
    exitCode = await proc.exited;
    log = `${err}\n${out}`
      .split(/\r?\n/)
      .filter((l) => l.trim() !== "")
      .map(scrub)
      .slice(-TAIL_LINES);
  } finally {
    opts.signal?.removeEventListener("abort", kill);
    if (proc.exitCode === null && proc.signalCode === null) kill();
  }
  if (opts.signal?.aborted) throw opts.signal.reason;
  const usage = proc.resourceUsage();
  const packagerCpuMs = usage ? Number(usage.cpuTime.user + usage.cpuTime.system) / 1000 : 0;
  if (exitCode !== 0) {
    const last = log.filter((l) => /^[EF]\d{4}|ERROR/.test(l)).at(-1) ?? log.at(-1) ?? "no log";
    throw new PackagingFailedError(`Shaka Packager failed (exit ${exitCode}): ${last}`, log);
  }

  const manifestPath = path.join(opts.outDir, MANIFEST);
  if (!fs.existsSync(manifestPath)) throw new PackagingFailedError("Shaka Packager wrote no MPD", log);
  const packaged = fs.readFileSync(manifestPath, "utf8");
  verifyOutputs(packaged, opts);
  // What dash.js and shaka-player both play with a ClearKey licence URL (mpd.ts).
  const mpd = clearKeyMpd(packaged);
  fs.writeFileSync(manifestPath, mpd);
  const renditions = opts.inputs.map((input) => {
    const file = `${input.name}.mpd`;
    fs.writeFileSync(path.join(opts.outDir, file), renditionMpd(mpd, input.name));
    return { name: input.name, mpd: file };
  });
  return { manifest: MANIFEST, renditions, durationSeconds: mpdDurationSeconds(mpd), packagingMs: performance.now() - started, packagerCpuMs };
}

/** Every expected stream is in the MPD with its init segment and at least its first media segment on disk. */
function verifyOutputs(mpd: string, opts: PackageDashOptions): void {
  if (!/<MPD\b[^>]*\stype="static"/.test(mpd)) throw new PackagingFailedError("the packager's MPD is not static");
  const reps = mpdRepresentations(mpd);
  for (const input of opts.inputs) {
    for (const stream of ["video", "audio"] as const) {
      if (!input[stream]) continue;
      const rep = reps.find((r) => r.rendition === input.name && r.contentType === stream);
      if (!rep) throw new PackagingFailedError(`the MPD has no ${stream} of ${input.name}`);
      const first = rep.media.replace(/\$Number%05d\$/, "00001");
      for (const rel of [rep.initialization, first]) {
        const file = path.join(opts.outDir, rel);
        if (!fs.existsSync(file) || fs.statSync(file).size === 0) throw new PackagingFailedError(`the packager wrote no ${rel}`);
      }
    }
  }
}
