import { TranscodeError } from "./transcode-error.ts";
import type { TranscoderLogger } from "./types.ts";

/** One structured line per failed job, whichever backend ran it. */
export function logFailure(logger: TranscoderLogger, transcoderId: string, backend: string, input: string, e: unknown): void {
  logger({
    event: "transcode.failed",
    transcoderId,
    backend,
    input,
    code: e instanceof TranscodeError ? e.code : "UNEXPECTED",
    message: e instanceof Error ? e.message : String(e),
  });
}
