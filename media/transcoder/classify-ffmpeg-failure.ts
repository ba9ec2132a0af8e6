import type { RunOutcome } from "./ffmpeg-runner.ts";
import { TranscodeError } from "./transcode-error.ts";

// ffprobe only reads containers; these say the streams inside could not be
// decoded (e.g. AV1 on the wasm core, which has no AV1 decoder). That is a
// property of the input, not an ffmpeg malfunction, and retrying won't help.
const UNDECODABLE = [/Decoder \(codec [^)]+\) not found/, /Failed to get pixel format/, /Cannot determine format of input stream/, /Error while decoding stream .*Invalid data found/];

/** Turns a failed run into the TranscodeError a caller can act on. */
export function classifyFfmpegFailure(run: RunOutcome, what: string): TranscodeError {
  const meaningful = run.stderrTail.filter((l) => {
    const t = l.trim();
    return t !== "" && t !== "Aborted()" && !t.startsWith("Last message repeated");
  });
  const last = meaningful.at(-1)?.trim() ?? "no log";
  const culprit = meaningful.find((l) => UNDECODABLE.some((re) => re.test(l)));
  if (culprit) return new TranscodeError("INPUT_UNSUPPORTED", `${what}: the input's streams cannot be decoded (${culprit.trim()})`, run.stderrTail);
  return new TranscodeError("FFMPEG_FAILED", `${what} failed (exit ${run.exitCode}): ${last}`, run.stderrTail);
}
