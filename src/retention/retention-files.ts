import { readdir, rm, stat } from "node:fs/promises";
import { join } from "node:path";
import { and, eq, inArray, isNull, sql } from "drizzle-orm";
import { actors, actorTags, broadcasts, work } from "../db/schema/index.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import type { Candidate, Q, RuleFiles } from "./retention-rules.ts";

/**
 * The object store when it is not DATA_DIR itself (STORAGE=s3), else
 * undefined: the local folders are always swept (in s3 mode they are this
 * process's scratch), the bucket too when there is one.
 */
const remote = (objects?: ObjectStore) => (objects && objects.kind !== "local" ? objects : undefined);

const OPEN_WORK = ["queued", "running"];

/** Where the service keeps what retention may remove (src/storage/media-store.ts, src/live/live-ingest.ts). */
export function retentionPaths(dataDir: string) {
  return {
    upload: (id: string) => join(dataDir, "uploads", id),
    recordings: join(dataDir, "recordings"),
    workRoot: join(dataDir, "work"),
    workDir: (videoId: string) => join(dataDir, "work", videoId),
    originalDir: (videoId: string) => join(dataDir, "originals", videoId),
  };
}

/** Removes `path` (file or folder); answers whether there was something to remove. */
async function removePath(path: string): Promise<boolean> {
  const there = await stat(path).then(
    () => true,
    () => false,
  );
  if (there) await rm(path, { recursive: true, force: true });
  return there;
}

/** Last modified (epoch ms), or null when absent. */
const modifiedAt = (path: string) =>
  stat(path).then(
    (s) => s.mtimeMs,
    () => null,
  );

/**
 * The files of upload slots about to be deleted: the upload itself (an
 * upload never registered, or whose video failed or was deleted before its
 * transcode consumed it) and a `.part` left by an interrupted transfer. A
 * slot still `receiving` whose `.part` was written within the period is a
 * transfer under way (a very slow PUT started before the URL expired): kept.
 */
export function uploadFiles(dataDir: string, objects?: ObjectStore): RuleFiles {
  const paths = retentionPaths(dataDir);
  const bucket = remote(objects);
  return {
    target: "upload_files",
    async remove(batch: Candidate[], cutoff: number) {
      const deletable: Candidate[] = [];
      let removed = 0;
      for (const c of batch) {
        const file = paths.upload(String(c.key));
        if (c.status === "receiving") {
          const written = await modifiedAt(`${file}.part`);
          if (written !== null && written >= cutoff) continue;
        }
        if (await removePath(`${file}.part`)) removed++;
        if (await removePath(file)) removed++;
        // STORAGE=s3: the presigned PUT wrote `uploads/<id>` straight to the bucket.
        const key = `uploads/${String(c.key)}`;
        if (bucket && (await bucket.stat(key))) {
          await bucket.delete(key);
          removed++;
        }
        deletable.push(c);
      }
      return { deletable, removed };
    },
  };
}

/**
 * What a deleted video may have left on disk: deleting a video removes its
 * folders at once (MediaStore.remove), but a run still writing (a fetch, a
 * transcode cut short) can recreate one afterwards. `removeMedia` is the
 * served folder (named by a token derived from the server secret), when the
 * caller can name it.
 */
export function deletedVideoFiles(dataDir: string, removeMedia?: (videoId: string) => Promise<void>, objects?: ObjectStore): RuleFiles {
  const paths = retentionPaths(dataDir);
  const bucket = remote(objects);
  return {
    target: "video_dirs",
    async remove(batch: Candidate[]) {
      let removed = 0;
      for (const c of batch) {
        if (c.kind !== "video") continue;
        const id = String(c.key);
        if (await removePath(paths.workDir(id))) removed++;
        if (await removePath(paths.originalDir(id))) removed++;
        if (bucket) {
          if ((await bucket.deletePrefix(`work/${id}`)) > 0) removed++;
          if ((await bucket.deletePrefix(`originals/${id}`)) > 0) removed++;
        }
        await removeMedia?.(id);
      }
      return { deletable: batch, removed };
    },
  };
}

/** The reads that prove a file unused, as statements (retention-indexes.test.ts explains each). */
export const fileChecks = {
  /** A broadcast in progress (or not yet finalized) writes or reads its recording. Primary key. */
  broadcast: (q: Q, streamId: string) => q.select({ id: broadcasts.streamId }).from(broadcasts).where(eq(broadcasts.streamId, streamId)).limit(1),
  /** Open work of the entity (a finalize, a fetch, a transcode). Index work_entity. */
  openWork: (q: Q, entityId: string) =>
    q
      .select({ id: work.id })
      .from(work)
      .where(and(eq(work.entityId, entityId), inArray(work.status, OPEN_WORK)))
      .limit(1),
  /** An open transcode whose payload names the file (whatever entity it belongs to). Index work_claim, open transcodes only. */
  openTranscodeOf: (q: Q, fileName: string) =>
    q
      .select({ id: work.id })
      .from(work)
      .where(and(eq(work.type, "transcode"), inArray(work.status, OPEN_WORK), sql`instr(${work.payload}, ${fileName}) > 0`))
      .limit(1),
  /** Primary key. */
  actor: (q: Q, id: string) => q.select({ kind: actors.kind, orgId: actors.orgId, deletedAt: actors.deletedAt }).from(actors).where(eq(actors.id, id)).limit(1),
  /**
   * The actor's state is tagged `settled` (a video completed or failed, a
   * stream ended or failed: the machines' own word for "nothing more will
   * happen to its files"). Primary key of actor_tags.
   */
  settled: (q: Q, a: { kind: string; orgId: string; id: string }) =>
    q
      .select({ id: actorTags.actorId })
      .from(actorTags)
      .where(and(eq(actorTags.kind, a.kind), eq(actorTags.tag, "settled"), eq(actorTags.orgId, a.orgId), eq(actorTags.actorId, a.id)))
      .limit(1),
  /** A stream's recording video, not deleted. Index actors_dedupe. */
  recordingVideo: (q: Q, orgId: string, streamId: string) =>
    q
      .select({ id: actors.id })
      .from(actors)
      .where(and(eq(actors.orgId, orgId), eq(actors.kind, "video"), eq(actors.dedupeKey, `recording:${streamId}`), isNull(actors.deletedAt))),
};

const exists = async (rows: PromiseLike<unknown[]>) => (await rows).length > 0;
const olderThan = async (path: string, before: number) => {
  const at = await modifiedAt(path);
  return at !== null && at < before;
};
const entries = (dir: string) => readdir(dir).catch(() => [] as string[]);

/**
 * DATA_DIR/recordings/<stream id>.flv that nothing will read or write again:
 * no broadcast holds the stream, the stream is settled (tag) or deleted or gone, no open work
 * (its finalize, or any transcode naming the file) needs it, and its
 * recording video, if any, is settled with no open work or is deleted. A
 * transcode that succeeds moves the file into the originals; what is left
 * here belongs to a recording whose transcode failed, a broadcast that
 * produced no media, or a stream deleted before its end was recorded.
 * `graceMs`: a file written this recently is kept whatever the rows say (a
 * publish that has opened its file before its row was committed).
 */
export async function sweepRecordings(q: Q, dataDir: string, now: number, graceMs: number, signal?: AbortSignal, objects?: ObjectStore): Promise<number> {
  const dir = retentionPaths(dataDir).recordings;
  let removed = 0;
  const local = (async function* () {
    for (const name of await entries(dir)) {
      const path = join(dir, name);
      yield { name, modifiedAt: () => modifiedAt(path), remove: () => removePath(path) };
    }
  })();
  removed += await sweepRecordingEntries(q, local, now, graceMs, signal);
  const bucket = remote(objects);
  if (bucket) {
    // STORAGE=s3: a finished broadcast's recording is the object `recordings/<stream>.flv`; the parts uploaded while
    // on air are `recordings/<stream>/part-NNNNNN.flv` (src/live/recording-parts.ts), left by a finalize that crashed
    // before deleting them or a process that lost its broadcast: one entry per stream (its keys are adjacent in the
    // listing), aged by its newest part, under the same rule as the recording, removed with one deletePrefix. The
    // listing is read whole first (one entry per stream, not per part), so no delete runs between two of its pages.
    const stored: RecordingEntry[] = [];
    type Parts = { streamId: string; newest: number };
    const seen: { parts: Parts | null } = { parts: null };
    const partsEntry = ({ streamId, newest }: Parts): RecordingEntry => ({
      name: `${streamId}.flv`,
      modifiedAt: async () => newest,
      remove: () => bucket.deletePrefix(`recordings/${streamId}`).then((n) => n > 0),
    });
    for await (const o of bucket.list("recordings")) {
      signal?.throwIfAborted();
      const name = o.key.slice("recordings/".length);
      const slash = name.indexOf("/");
      if (slash < 0) {
        stored.push({ name, modifiedAt: async () => o.lastModified, remove: () => bucket.delete(o.key).then(() => true) });
        continue;
      }
      const streamId = name.slice(0, slash);
      const previous = seen.parts;
      if (previous && previous.streamId !== streamId) stored.push(partsEntry(previous));
      seen.parts = { streamId, newest: Math.max(previous?.streamId === streamId ? previous.newest : 0, o.lastModified) };
    }
    if (seen.parts) stored.push(partsEntry(seen.parts));
    removed += await sweepRecordingEntries(q, stored, now, graceMs, signal);
  }
  return removed;
}

type RecordingEntry = { name: string; modifiedAt: () => Promise<number | null>; remove: () => Promise<boolean> };

async function sweepRecordingEntries(q: Q, found: AsyncIterable<RecordingEntry> | Iterable<RecordingEntry>, now: number, graceMs: number, signal?: AbortSignal): Promise<number> {
  let removed = 0;
  for await (const entry of found) {
    signal?.throwIfAborted();
    const { name } = entry;
    if (!name.endsWith(".flv")) continue;
    const streamId = name.slice(0, -".flv".length);
    const at = await entry.modifiedAt();
    if (at === null || at >= now - graceMs) continue;
    if (await exists(fileChecks.broadcast(q, streamId))) continue;
    if (await exists(fileChecks.openWork(q, streamId))) continue;
    if (await exists(fileChecks.openTranscodeOf(q, name))) continue;
    const stream = (await fileChecks.actor(q, streamId))[0];
    if (stream && stream.deletedAt === null && !(await exists(fileChecks.settled(q, { ...stream, id: streamId })))) continue;
    if (stream) {
      const videos = await fileChecks.recordingVideo(q, stream.orgId, streamId);
      let inUse = false;
      for (const v of videos) {
        const video = { kind: "video", orgId: stream.orgId, id: v.id };
        if (!(await exists(fileChecks.settled(q, video))) || (await exists(fileChecks.openWork(q, v.id)))) inUse = true;
      }
      if (inUse) continue;
    }
    if (await entry.remove()) removed++;
  }
  return removed;
}

/**
 * DATA_DIR/work/<video id> of a video that is settled (tag), deleted or gone,
 * with no open work: the fetch and transcode stages remove it themselves
 * (on success, on failure for good, on delete), so what is left is the
 * trace of a crash or of a run that outlived its video's deletion.
 */
export async function sweepWorkDirs(q: Q, dataDir: string, now: number, graceMs: number, signal?: AbortSignal, objects?: ObjectStore): Promise<number> {
  const paths = retentionPaths(dataDir);
  let removed = 0;
  for (const id of await entries(paths.workRoot)) {
    signal?.throwIfAborted();
    const path = paths.workDir(id);
    if (!(await olderThan(path, now - graceMs))) continue;
    if (!(await workUnused(q, id))) continue;
    if (await removePath(path)) removed++;
  }
  const bucket = remote(objects);
  if (bucket) {
    // STORAGE=s3: `work/<video>/…` objects (a fetched source between the stages); one video's keys are adjacent in the listing.
    type WorkObjects = { id: string; newest: number };
    const seen: { current: WorkObjects | null } = { current: null };
    const settle = async (w: WorkObjects) => {
      if (w.newest >= now - graceMs || !(await workUnused(q, w.id))) return;
      if ((await bucket.deletePrefix(`work/${w.id}`)) > 0) removed++;
    };
    for await (const o of bucket.list("work")) {
      signal?.throwIfAborted();
      const id = o.key.split("/")[1];
      if (!id) continue;
      const previous = seen.current;
      if (previous && previous.id !== id) await settle(previous);
      seen.current = { id, newest: Math.max(previous && previous.id === id ? previous.newest : 0, o.lastModified) };
    }
    if (seen.current) await settle(seen.current);
  }
  return removed;
}

/** No open work, and the video is settled, deleted or gone. */
async function workUnused(q: Q, id: string): Promise<boolean> {
  if (await exists(fileChecks.openWork(q, id))) return false;
  const video = (await fileChecks.actor(q, id))[0];
  return !(video && video.deletedAt === null && !(await exists(fileChecks.settled(q, { ...video, id }))));
}
