import { TranscodeError } from "./transcode-error.ts";

/** The error a run rejects with when its signal fires. */
export function abortReason(signal: AbortSignal): TranscodeError {
  const reason: unknown = signal.reason;
  if (reason instanceof TranscodeError) return reason;
  return new TranscodeError("CANCELLED", "transcode was cancelled");
}

export interface JobSignal {
  signal: AbortSignal;
  dispose(): void;
}

/**
 * Merges the caller's signal with a hard deadline. The reason tells the
 * runner which error to raise: TIMEOUT for the deadline, CANCELLED otherwise.
 */
export function createJobSignal(opts: { signal?: AbortSignal; timeoutMs?: number; what?: string }): JobSignal {
  const controller = new AbortController();
  const onAbort = () => controller.abort(new TranscodeError("CANCELLED", `${opts.what ?? "transcode"} was cancelled`));
  if (opts.signal?.aborted) onAbort();
  else opts.signal?.addEventListener("abort", onAbort, { once: true });
  let timer: ReturnType<typeof setTimeout> | undefined;
  if (opts.timeoutMs !== undefined && opts.timeoutMs > 0 && !controller.signal.aborted) {
    const ms = opts.timeoutMs;
    timer = setTimeout(() => controller.abort(new TranscodeError("TIMEOUT", `${opts.what ?? "transcode"} exceeded ${ms} ms`)), ms);
  }
  return {
    signal: controller.signal,
    dispose() {
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    },
  };
}
