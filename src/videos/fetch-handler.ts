import { extname, join } from "node:path";
import type { ActorRuntime } from "../actors/actor-runtime.ts";
import type { WorkRow } from "../work/work-ledger.ts";
import { PermanentWorkError, type WorkContext, type WorkHandler, type WorkResult } from "../work/work-runner.ts";
import type { VideoWork } from "./video-work.ts";
import type { MediaStore } from "../storage/media-store.ts";
import { crashPoint } from "../faults.ts";
import { fetchSource } from "./fetch-source.ts";
import type { TranscodePayload } from "../../machines/video-payload.ts";
import { failVideo } from "./transcode-handler.ts";

/**
 * The `fetch-source` stage of a video registered by URL (queued by its machine
 * on entering `fetching`): stream the source into the video's work dir, store
 * it, and report SOURCE_READY in the transaction that ends the row (the
 * machine then queues the transcode). Fetches have their own pool (SOURCE_FETCH_CONCURRENCY) and a
 * per-organization share (SOURCE_FETCH_PER_ORG), so a slow or stalled source
 * never holds a transcode worker and one organization's slow sources leave
 * room for the others'. Only a fully fetched source is queued for transcoding.
 */
export function createFetchHandler(deps: {
  runtime: ActorRuntime;
  store: MediaStore;
  guard: (url: URL) => Promise<void>;
  maxBytes: number;
  timeoutMs: number;
  stallMs: number;
}): WorkHandler<VideoWork, "fetch-source"> {
  const { runtime, store } = deps;
  return {
    async run(job: WorkRow<VideoWork, "fetch-source">, { signal, logger }: WorkContext): Promise<WorkResult<VideoWork>> {
      const record = await runtime.get("video", job.entityId);
      if (!record?.tags.has("transcoding")) return;
      const ctx = record.context;
      if (!ctx.sourceUrl) throw new PermanentWorkError("INPUT_UNSUPPORTED", "The video has no source.");
      const workDir = await store.ensure(store.workDir(ctx.id));
      const ext =
        extname(new URL(ctx.sourceUrl).pathname)
          .replace(/[^.\w]/g, "")
          .slice(0, 8) || ".bin";
      const dest = join(workDir, `source${ext}`);
      const bytes = await fetchSource(ctx.sourceUrl, dest, { signal, maxBytes: deps.maxBytes, timeoutMs: deps.timeoutMs, stallMs: deps.stallMs, guard: deps.guard }).catch((err) => {
        throw sourceFailure(err);
      });
      logger.info("Source fetched", { video_id: ctx.id, bytes });
      crashPoint("fetch:after-fetch");
      // Another process may run the transcode: the source is stored first (STORAGE=local: already at its key's path).
      const sourceKey = store.keyOf(dest)!;
      await store.objects.putFile(sourceKey, dest, { move: true });
      const source: TranscodePayload = { sourcePath: dest, sourceKey, fetched: true };
      // The fact, in the transaction that ends this row: the machine queues the transcode.
      return { report: (tx) => runtime.sendIn(tx, "video", ctx.id, { type: "SOURCE_READY", source }).then((sent) => sent.afterCommit) };
    },

    onFailed: (tx, job, err) => failVideo({ runtime, store }, tx, job, err),
  };
}

/** Errors of our own disk while the source is written: what the runner retries without spending an attempt. */
const LOCAL_DISK = new Set(["ENOSPC", "EDQUOT", "EROFS", "EIO", "EMFILE", "ENFILE"]);

/**
 * A failure of the source fetch as the runner should see it: the source host's network errors (a reset while the
 * body streams carries `ECONNRESET`, as a database that went away does) become plain errors, retried on the
 * source's attempts; our disk's errors keep their code (src/infrastructure-failure.ts).
 */
function sourceFailure(err: unknown): unknown {
  if (err instanceof PermanentWorkError) return err;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && LOCAL_DISK.has(code)) return err;
  return new Error(String((err as Error)?.message ?? err));
}
