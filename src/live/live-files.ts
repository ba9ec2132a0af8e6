import { mkdir, mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { LiveHlsFileSink } from "../../media/hls/live-hls-packager.ts";
import type { Logger } from "../log.ts";
import type { ObjectStore } from "../storage/object-store.ts";
import type { LiveUrls } from "./live-urls.ts";
import { flvContinuation } from "../../media/flv/flv-continuation.ts";
import { type LlSegment, parseLlPlaylist } from "../../media/hls/ll-playlist.ts";
import { assembleParts, createPartUploader, type PartStats, type PartUploader, partsEnd, partsPrefix } from "./recording-parts.ts";
import { probeRecording } from "./recording-probe.ts";

const HLS_TYPES: Record<string, string> = {
  m3u8: "application/vnd.apple.mpegurl",
  ts: "video/mp2t",
  m4s: "video/iso.segment",
  mp4: "video/mp4",
};
/** A live playlist closed by another process: ENDLIST, and no LL-HLS preload hint of a part that will never come. */
const endedPlaylist = (text: string) => `${text.replace(/^#EXT-X-PRELOAD-HINT:.*\n?/gm, "").replace(/\n?$/, "\n")}#EXT-X-ENDLIST\n`;
const typeOf = (name: string) => HLS_TYPES[name.slice(name.lastIndexOf(".") + 1)] ?? "application/octet-stream";

/** Upload times of live HLS files (ms), per broadcast, for the finalize log and the README's figure. */
export interface UploadStats {
  files: number;
  totalMs: number;
  maxMs: number;
}

/**
 * Where a broadcast lives: its FLV recording (the recording video's source)
 * and its live HLS files (served at hls_url; removed LIVE_FILES_RETENTION_MS
 * after the end by `live-files-remove` work, or at once when the stream is
 * deleted), under the object store's keys `recordings/<stream>.flv` and
 * `live/<token>/<file>`.
 *
 * The FLV is always written on this process's disk (`flvPath`), an append-only
 * file for the whole broadcast; with `STORAGE=s3` its growth is also uploaded
 * every `partMs` as parts `recordings/<stream>/part-NNNNNN.flv`
 * (recording-parts.ts), from which another process rebuilds it should this
 * one die. The live HLS goes where the store is: with
 * `STORAGE=local` the packager writes `DATA_DIR/live/<token>/` itself (no
 * copy, `hlsSink` is undefined); with `STORAGE=s3` every finished file is
 * uploaded, nothing is written locally, so any process can serve hls_url.
 */
export function createLiveFiles(opts: {
  dataDir: string;
  urls: LiveUrls;
  objects: ObjectStore;
  /** RECORDING_PART_MS: how often a broadcast's new FLV bytes go to the bucket (remote store only). */
  partMs?: number;
}) {
  const { objects } = opts;
  const remote = objects.kind === "s3";
  const flvKey = (id: string) => `recordings/${id}.flv`;
  const flvPath = (id: string) => join(opts.dataDir, "recordings", `${id}.flv`);
  const hlsPrefix = (id: string) => `live/${opts.urls.token(id)}`;
  const hlsDir = (id: string) => join(opts.dataDir, hlsPrefix(id));
  const uploads = new Map<string, UploadStats>();
  const parts = new Map<string, PartStats>();

  return {
    flvPath,
    flvKey,
    hlsDir,
    hlsPrefix,

    /**
     * A file of the broadcast's live HLS as a viewer is served it (the route
     * reads the same key of the same store), or null while it is not stored.
     */
    async readHls(id: string, name: string): Promise<Uint8Array | null> {
      const key = `${hlsPrefix(id)}/${name}`;
      if ((await objects.stat(key)) === null) return null;
      return new Uint8Array(await new Response(objects.body(key)).arrayBuffer());
    },

    /**
     * The packager's sink with a remote store: each file is uploaded whole
     * before the packager goes on, so the playlist naming a segment is
     * uploaded only after the segment (and the init segment) is; undefined
     * with the local store (the packager writes its folder itself).
     */
    hlsSink(id: string): LiveHlsFileSink | undefined {
      if (!remote) return undefined;
      const prefix = hlsPrefix(id);
      const stats: UploadStats = { files: 0, totalMs: 0, maxMs: 0 };
      uploads.set(id, stats);
      return {
        prepare: async () => {
          await objects.deletePrefix(prefix);
        },
        async write(name, bytes) {
          const started = performance.now();
          await objects.putBytes(`${prefix}/${name}`, bytes, { type: typeOf(name) });
          const ms = performance.now() - started;
          stats.files++;
          stats.totalMs += ms;
          stats.maxMs = Math.max(stats.maxMs, ms);
        },
        remove: (name) => objects.delete(`${prefix}/${name}`),
      };
    },

    /**
     * The uploader of the FLV's parts while on air (remote store only; the
     * broadcast starts it with its file and stops it at its end).
     */
    recordingParts(id: string, logger: Logger): PartUploader | undefined {
      if (!remote) return undefined;
      const uploader = createPartUploader({ streamId: id, path: flvPath(id), objects, intervalMs: opts.partMs ?? 10_000, logger });
      parts.set(id, uploader.stats);
      return uploader;
    },

    /** This process's part uploads for a broadcast (remote store only), forgotten once read. */
    takePartStats(id: string): PartStats | undefined {
      const s = parts.get(id);
      parts.delete(id);
      return s;
    },

    /** This process's upload times for a broadcast's live HLS (remote store only), forgotten once read. */
    takeUploadStats(id: string): UploadStats | undefined {
      const s = uploads.get(id);
      uploads.delete(id);
      return s;
    },

    /**
     * When the recording was last written (epoch ms), or null: the local
     * file, else (remote store) the upload of an earlier finalize attempt.
     */
    async recordingWrittenAt(id: string): Promise<number | null> {
      const local = await stat(flvPath(id)).then(
        (s) => s.mtimeMs,
        () => null,
      );
      if (local !== null || !remote) return local;
      return (await objects.stat(flvKey(id)))?.lastModified ?? null;
    },

    /**
     * The recording's size and length. On this disk as a rule; with a remote
     * store, a finalize attempt that uploaded it (and removed the local file)
     * then died before its commit left it only in the bucket: probed from a
     * downloaded copy. A broadcast whose owner died on another machine left
     * its parts: they are concatenated into the local file (then stored by
     * `storeRecording` as any recording); without parts, no media (the
     * stream ends without a recording).
     */
    async probe(id: string): Promise<Awaited<ReturnType<typeof probeRecording>> & { rebuiltFrom?: { parts: number; bytes: number } }> {
      const local = await probeRecording(flvPath(id));
      if (local.hasMedia || !remote) return local;
      if ((await objects.stat(flvKey(id))) === null) {
        await mkdir(join(opts.dataDir, "recordings"), { recursive: true });
        const rebuilt = await assembleParts(objects, id, flvPath(id));
        return rebuilt.parts > 0 ? { ...(await probeRecording(flvPath(id))), rebuiltFrom: rebuilt } : local;
      }
      const dir = await mkdtemp(join(tmpdir(), "vidlive-probe-"));
      try {
        const copy = join(dir, "recording.flv");
        if (!(await objects.download(flvKey(id), copy))) return local;
        return await probeRecording(copy);
      } finally {
        await rm(dir, { recursive: true, force: true });
      }
    },

    /**
     * Before the commit that registers the recording: with a remote store the
     * FLV is uploaded to `recordings/<stream>.flv` (the recording's transcode
     * may run on any process) and the local file removed; an FLV without
     * media is only removed. Then the parts go (the whole file is stored, or
     * there was no media): a crash between the two leaves the FLV in the
     * bucket, which the next attempt probes and keeps. Nothing to do with the
     * local store (the file already is at its key).
     */
    async storeRecording(id: string, hasMedia: boolean): Promise<void> {
      if (!remote) return;
      const path = flvPath(id);
      const there = await stat(path).then(
        () => true,
        () => false,
      );
      if (there && hasMedia) await objects.putFile(flvKey(id), path, { type: "video/x-flv", move: true });
      else if (there) await rm(path, { force: true });
      await objects.deletePrefix(partsPrefix(id));
    },

    /**
     * A broadcast taken over after its owner died (issue 26): where its
     * recording and its live playlist go on. The FLV is this disk's (a
     * process on the same machine) or, with a remote store, rebuilt here from
     * the dead owner's parts; it is continued after its last whole tag, and
     * (remote) the parts go on from the bucket's, the first one written at
     * the offset where the bucket's copy and this file agree. The playlist's
     * segments are read back from the store. Null parts of the answer: nothing
     * to continue (the broadcast starts them afresh).
     */
    async continuation(id: string): Promise<BroadcastContinuation> {
      let flv = await flvContinuation(flvPath(id));
      if (!flv && remote) {
        await mkdir(join(opts.dataDir, "recordings"), { recursive: true });
        if ((await assembleParts(objects, id, flvPath(id))).parts > 0) flv = await flvContinuation(flvPath(id));
      }
      let parts: { offset: number; next: number } | undefined;
      if (flv && remote) {
        const end = await partsEnd(objects, id);
        parts = { offset: Math.min(end.length, flv.offset), next: end.next };
      }
      const text = await this.readHls(id, "index.m3u8").then((b) => (b ? new TextDecoder().decode(b) : null));
      const playlist = text ? parseLlPlaylist(text) : null;
      return {
        recording: flv && flv.tags > 0 ? { appendAt: flv.offset, lastTimestampMs: flv.lastTimestampMs, ...(parts ? { parts } : {}) } : null,
        playlist: playlist && !playlist.ended ? { segments: playlist.segments, discontinuitySequence: playlist.discontinuitySequence } : null,
      };
    },

    /** A playlist left open by a process that died gets its ENDLIST, so players stop waiting. */
    async closePlaylist(id: string): Promise<void> {
      if (!remote) {
        const playlist = join(hlsDir(id), "index.m3u8");
        const text = await readFile(playlist, "utf8").catch(() => null);
        if (text !== null && !text.includes("#EXT-X-ENDLIST")) await writeFile(playlist, endedPlaylist(text));
        return;
      }
      const key = `${hlsPrefix(id)}/index.m3u8`;
      if ((await objects.stat(key)) === null) return;
      const text = await new Response(objects.body(key)).text();
      if (!text.includes("#EXT-X-ENDLIST")) await objects.putBytes(key, endedPlaylist(text), { type: HLS_TYPES.m3u8 });
    },

    /** The live HLS files, wherever the store keeps them. */
    async removeHls(id: string): Promise<void> {
      await objects.deletePrefix(hlsPrefix(id));
    },
  };
}

export type LiveFiles = ReturnType<typeof createLiveFiles>;

/** What a taken-over broadcast continues (LiveFiles.continuation). */
export interface BroadcastContinuation {
  recording: { appendAt: number; lastTimestampMs: number; parts?: { offset: number; next: number } } | null;
  playlist: { segments: LlSegment[]; discontinuitySequence: number } | null;
}
