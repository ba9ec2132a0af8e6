import { createJobSignal } from "./abort-reason.ts";
import { createChildRegistry } from "./child-processes.ts";
import { cutInput } from "./cut-input.ts";
import { createNativeRunner } from "./native-runner.ts";
import { probeInput } from "./probe-input.ts";
import { runTranscodeJob } from "./run-transcode-job.ts";
import { logFailure } from "./log-failure.ts";
import { TranscodeError } from "./transcode-error.ts";
import { createTranscoderId } from "./transcoder-id.ts";
import type { CreateTranscoderOptions, Transcoder } from "./types.ts";

export const DEFAULT_PROBE_TIMEOUT_MS = 30_000;

/**
 * Spawns the system ffmpeg per job. No queue of its own: ffmpeg already uses
 * every core, so callers decide how many jobs run at once.
 */
export function createNativeTranscoder(opts: Omit<CreateTranscoderOptions, "backend"> = {}): Transcoder {
  const runner = createNativeRunner({ children: opts.childPidDir ? createChildRegistry(opts.childPidDir) : undefined });
  const id = createTranscoderId("native");
  const logger = opts.logger ?? (() => {});
  const running = new Set<AbortController>();
  let closed = false;

  // close() cancels whatever is still running, like the wasm pool does.
  const track = (signal?: AbortSignal) => {
    if (closed) throw new TranscodeError("CANCELLED", "transcoder is closed");
    const c = new AbortController();
    const forward = () => c.abort(signal?.reason);
    if (signal?.aborted) forward();
    else signal?.addEventListener("abort", forward, { once: true });
    running.add(c);
    return {
      signal: c.signal,
      done() {
        running.delete(c);
        signal?.removeEventListener("abort", forward);
      },
    };
  };

  return {
    backend: "native",
    id,
    async probe(input, probeOpts = {}) {
      const t = track(probeOpts.signal);
      const job = createJobSignal({ signal: t.signal, timeoutMs: probeOpts.timeoutMs ?? DEFAULT_PROBE_TIMEOUT_MS, what: "probe" });
      try {
        return await probeInput(runner, input, job.signal);
      } finally {
        job.dispose();
        t.done();
      }
    },
    async cut(job, cutOpts = {}) {
      const t = track(cutOpts.signal);
      const js = createJobSignal({ signal: t.signal, timeoutMs: cutOpts.timeoutMs, what: "cut" });
      try {
        return await cutInput(runner, job, js.signal);
      } finally {
        js.dispose();
        t.done();
      }
    },
    async transcode(job, transcodeOpts = {}) {
      const t = track(transcodeOpts.signal);
      const js = createJobSignal({ signal: t.signal, timeoutMs: transcodeOpts.timeoutMs });
      try {
        return await runTranscodeJob(job, {
          runner,
          signal: js.signal,
          onProgress: transcodeOpts.onProgress,
          onOutputs: transcodeOpts.onOutputs,
          logger,
          transcoderId: id,
          preset: opts.preset ?? "veryfast",
        });
      } catch (e) {
        logFailure(logger, id, "native", job.input, e);
        throw e;
      } finally {
        js.dispose();
        t.done();
      }
    },
    async close() {
      closed = true;
      for (const c of running) c.abort(new TranscodeError("CANCELLED", "transcoder was closed"));
    },
  };
}
