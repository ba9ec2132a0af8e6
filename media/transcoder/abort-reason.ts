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

/** The longest delay setTimeout honours. */
const MAX_TIMER_MS = 2 ** 31 - 1;

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
    // A delay past 2^31-1 ms (24.8 days) would fire after 1 ms (TimeoutOverflowWarning) and time every job out at once:
    // a longer deadline is held at that bound, which no transcode reaches.
    timer = setTimeout(() => controller.abort(new TranscodeError("TIMEOUT", `${opts.what ?? "transcode"} exceeded ${ms} ms`)), Math.min(ms, MAX_TIMER_MS));
  }
  return {
    signal: controller.signal,
    dispose() {
      if (timer) clearTimeout(timer);
      opts.signal?.removeEventListener("abort", onAbort);
    },
  };
}
