import { mkdir } from "node:fs/promises";
import { dirname } from "node:path";
import { createFlvWriter, type FlvWriter } from "../../media/flv/flv-writer.ts";
import type { FlvTag } from "../../media/flv/flv-tag.ts";
import { createLiveHlsPackager, LIVE_HLS_LATENCY_PRESETS, type LiveHlsPackager, type LiveHlsSegmentInfo } from "../../media/hls/live-hls-packager.ts";
import type { Latency } from "../../machines/livestream-payload.ts";
import type { Logger } from "../log.ts";

/**
 * One broadcast of a stream across its publish sessions: the FLV recording and
 * the live HLS packager stay open through a reconnect, and each new session's
 * timestamps continue where the last one stopped.
 */
export function createBroadcast(opts: { streamId: string; latency: Latency; flvPath: string; hlsDir: string; logger: Logger; onSegment: (info: LiveHlsSegmentInfo) => void }) {
  const preset = LIVE_HLS_LATENCY_PRESETS[opts.latency];
  let writer: FlvWriter | undefined;
  let packager: LiveHlsPackager | undefined;
  let offset = 0;
  let lastTs = -1;
  let sessionFirst: number | null = null;
  let sessions = 0;
  let ended = false;
  const firstPublishAt = Date.now();

  async function open() {
    if (!writer) {
      await mkdir(dirname(opts.flvPath), { recursive: true });
      writer = await createFlvWriter(opts.flvPath, { hasAudio: true, hasVideo: true });
    }
    packager ??= createLiveHlsPackager({
      dir: opts.hlsDir,
      ...preset,
      onSegment: (info) => opts.onSegment(info),
      logger: {
        warn: (m, f) => opts.logger.warn(m, { ...f, stream_id: opts.streamId }),
        error: (m, f) => opts.logger.error(m, { ...f, stream_id: opts.streamId }),
      },
    });
  }

  return {
    segmentSeconds: preset.segmentSeconds,
    firstPublishAt,
    publishing: false,
    get sessions() {
      return sessions;
    },
    async startSession() {
      // Claimed before the first await, so a second encoder racing this one is refused.
      this.publishing = true;
      await open();
      sessions++;
      sessionFirst = null;
    },
    async push(tag: FlvTag) {
      if (ended) return;
      if (sessionFirst === null) {
        sessionFirst = tag.timestamp;
        // A reconnecting encoder restarts at 0: continue after the last tag.
        offset = lastTs < 0 ? 0 : lastTs + 1 - tag.timestamp;
      }
      const t: FlvTag = { ...tag, timestamp: Math.max(0, tag.timestamp + offset) };
      lastTs = Math.max(lastTs, t.timestamp);
      await Promise.all([writer!.write(t), packager!.push(t)]);
    },
    info: () => packager?.info() ?? null,
    tagsWritten: () => writer?.tagsWritten ?? 0,
    /** Last segment + ENDLIST, and the recording closed and synced. Idempotent. */
    async end() {
      if (ended) return;
      ended = true;
      this.publishing = false;
      await packager?.end().catch((err) => opts.logger.error("Cannot finish the live playlist", { err, stream_id: opts.streamId }));
      await writer?.close();
    },
  };
}

export type Broadcast = ReturnType<typeof createBroadcast>;
