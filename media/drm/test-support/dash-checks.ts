/**
 * Independent checks of encrypted DASH output with ffmpeg/ffprobe (the
 * system's, else ffmpeg.wasm: media/test-support/media-tools.ts).
 *
 * ffmpeg 5.1 decrypts CENC (`-decryption_key`) in an init segment followed by
 * ONE media segment, but fails on several encrypted fragments joined, so each
 * segment is checked on its own: init + segment in a temporary file.
 */
import { expect } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ffprobeJson, runFfmpeg } from "../../test-support/media-tools.ts";
import type { MpdRepresentation } from "../mpd.ts";

export interface SegmentDecode {
  segment: string;
  exitCode: number;
  /** One md5 per decoded frame of the representation's stream. */
  hashes: string[];
  stderr: string;
}

/** The media segments of a representation on disk, in order (from its `media` template). */
export function segmentFiles(dashDir: string, rep: MpdRepresentation): string[] {
  const [prefix, suffix] = rep.media.split("$Number%05d$") as [string, string];
  const dir = path.join(dashDir, path.dirname(prefix));
  const base = path.basename(prefix);
  return fs
    .readdirSync(dir)
    .filter((f) => f.startsWith(base) && f.endsWith(suffix) && /^\d{5}$/.test(f.slice(base.length, f.length - suffix.length)))
    .sort()
    .map((f) => path.join(dir, f));
}

/** Decodes init + each segment alone, with or without the key. */
export async function decodeSegments(dashDir: string, rep: MpdRepresentation, key?: string): Promise<SegmentDecode[]> {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "dash-check-"));
  try {
    const init = fs.readFileSync(path.join(dashDir, rep.initialization));
    const out: SegmentDecode[] = [];
    for (const segment of segmentFiles(dashDir, rep)) {
      const joined = path.join(tmp, `${path.basename(segment)}.mp4`);
      fs.writeFileSync(joined, Buffer.concat([init, fs.readFileSync(segment)]));
      const args = ["-hide_banner", "-nostdin", "-v", "error"];
      if (key) args.push("-decryption_key", key);
      args.push("-i", joined, "-map", rep.contentType === "video" ? "0:v:0" : "0:a:0", "-f", "framemd5", "-");
      const { exitCode, stdout, stderr } = await runFfmpeg(args, { input: joined });
      const hashes = stdout
        .split("\n")
        .filter((l) => l !== "" && !l.startsWith("#"))
        .map((l) => l.split(",").at(-1)!.trim());
      out.push({ segment: path.basename(segment), exitCode, hashes, stderr });
      fs.rmSync(joined);
    }
    return out;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

/** Decoded video frames of a file (`ffprobe -count_frames`). */
export async function countVideoFrames(file: string): Promise<number> {
  const json = (await ffprobeJson(file, ["-count_frames", "-select_streams", "v:0", "-show_entries", "stream=nb_read_frames"])) as { streams: Array<{ nb_read_frames: string }> };
  return Number(json.streams[0]?.nb_read_frames);
}

/**
 * What ffmpeg 5.1 does with a segment it has no key for: it reads the
 * ciphertext as media. H.264 decodes to as many frames, all wrong, with
 * "error while decoding MB" errors; AAC decodes (almost) nothing and exits 69.
 */
export function expectLocked(locked: SegmentDecode[], clear: SegmentDecode[], type: "video" | "audio"): void {
  expect(locked.map((s) => s.segment)).toEqual(clear.map((s) => s.segment));
  locked.forEach((s, i) => {
    const right = new Set(clear[i]!.hashes);
    expect(s.hashes.filter((h) => right.has(h))).toEqual([]);
    if (type === "video") expect(s.stderr).toMatch(/error while decoding MB|Invalid data found/);
    else {
      // Random IVs: now and then a garbage AAC frame happens to parse.
      expect(s.exitCode).toBe(69);
      expect(s.hashes.length).toBeLessThan(clear[i]!.hashes.length / 4);
    }
  });
}
