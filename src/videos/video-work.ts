import type { MachineWork } from "../../machines/contracts.ts";
import type { Config } from "../config.ts";
import { defineWork, type WorkDeclaration } from "../work/work-declaration.ts";
import { exponentialBackoffMs, MINUTE } from "../work/work-policies.ts";

/** The videos module's work, with its payloads (both queued by the video's machine). */
export interface VideoWork {
  /** Stream a URL source into the video's work dir; reported back as SOURCE_READY. */
  "fetch-source": MachineWork["fetch-source"];
  /** Transcode a source on disk into the ladder. */
  transcode: MachineWork["transcode"];
}

type VideoWorkConfig = Pick<Config, "sourceFetchConcurrency" | "sourceFetchPerOrg" | "sourceTimeoutMs" | "transcodeWorkers" | "transcodeTimeoutMs">;

/** Their policies (handlers: video-module.ts). */
export function videoWork(config: VideoWorkConfig): WorkDeclaration<VideoWork> {
  return defineWork<VideoWork>("videos", {
    "fetch-source": {
      maxAttempts: 3,
      backoffMs: exponentialBackoffMs,
      concurrency: config.sourceFetchConcurrency,
      perOrgLimit: config.sourceFetchPerOrg,
      // fetchSource enforces SOURCE_TIMEOUT_MS itself; this is the backstop.
      timeoutMs: config.sourceTimeoutMs + MINUTE,
    },
    transcode: { maxAttempts: 3, backoffMs: exponentialBackoffMs, concurrency: config.transcodeWorkers, timeoutMs: config.transcodeTimeoutMs + MINUTE },
  });
}
