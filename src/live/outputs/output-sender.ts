import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { encodeFlvHeader, encodeFlvTag } from "../../../media/flv/flv-writer.ts";
import type { FlvTag } from "../../../media/flv/flv-tag.ts";
import { scrubTarget, type OutputTarget } from "./output-target.ts";

/** Bytes handed to the sender and not yet taken by it, above which tags are dropped up to the next keyframe. */
export const OUTPUT_BUFFER_BYTES = 4 * 1024 * 1024;
/** A stopped sender that has not exited by then is killed. */
const KILL_AFTER_MS = 1000;
/** The child dies with us (kill -9 included): util-linux's setpriv, when present. */
const PDEATHSIG = existsSync("/usr/bin/setpriv") ? ["/usr/bin/setpriv", "--pdeathsig", "KILL", "--"] : [];

export interface SenderEvents {
  /** The target took the stream's header: the connection is up. */
  onActive(): void;
  /** Bytes sent to the target so far (ffmpeg's muxed total), every half second. */
  onBytes(total: number): void;
  /** The sender ended: `error` null after a clean end of the broadcast, else why (the target's key scrubbed). */
  onExit(error: string | null): void;
}

/**
 * One simulcast connection: an ffmpeg child reading the broadcast as FLV on
 * its stdin and copying it (no re-encoding) to the target, `-f flv` for RTMP,
 * `-f mpegts` for SRT. `push` never blocks the broadcast: the bytes ffmpeg has
 * not taken yet are counted (write callbacks) and, past `bufferBytes`, tags
 * are dropped until the next video keyframe once the backlog has halved.
 * Starts with the codec configurations (`headers`) and waits for a keyframe.
 */
export function startOutputSender(opts: { target: OutputTarget; headers: FlvTag[]; events: SenderEvents; bufferBytes?: number; ffmpeg?: string }) {
  const limit = opts.bufferBytes ?? OUTPUT_BUFFER_BYTES;
  const { target, events } = opts;
  const args = [
    ...PDEATHSIG,
    opts.ffmpeg ?? "ffmpeg",
    "-hide_banner",
    "-loglevel",
    "error",
    "-nostats",
    "-f",
    "flv",
    "-i",
    "pipe:0",
    "-map",
    "0",
    "-c",
    "copy",
    "-progress",
    "pipe:1",
    "-stats_period",
    "0.5",
    "-f",
    target.format,
    ...(target.format === "flv" ? ["-flvflags", "no_duration_filesize"] : []),
    target.target,
  ];
  const child: ChildProcess = spawn(args[0]!, args.slice(1), { stdio: ["pipe", "pipe", "pipe"] });
  let pending = 0;
  let waitingForKey = true;
  let dropped = 0;
  let stopping = false;
  let active = false;
  let lastError = "";
  let exited = false;
  const stdin = child.stdin!;
  stdin.on("error", () => undefined);

  function write(bytes: Uint8Array) {
    pending += bytes.length;
    stdin.write(bytes, () => {
      pending -= bytes.length;
    });
  }

  let progress = "";
  child.stdout!.on("data", (chunk: Buffer) => {
    progress += chunk.toString("latin1");
    const lines = progress.split("\n");
    progress = lines.pop() ?? "";
    for (const line of lines) {
      const m = /^total_size=(\d+)/.exec(line);
      if (!m) continue;
      const total = Number(m[1]);
      if (total > 0 && !active) {
        active = true;
        events.onActive();
      }
      events.onBytes(total);
    }
  });
  child.stderr!.on("data", (chunk: Buffer) => {
    const text = chunk.toString("utf8").trim();
    if (text) lastError = text.split("\n").pop()!.slice(0, 500);
  });
  child.on("exit", (code, signal) => {
    exited = true;
    clearTimeout(killer);
    if (stopping) return events.onExit(null);
    const why = lastError || (signal ? `ffmpeg ended by ${signal}` : `ffmpeg exited with ${code}`);
    events.onExit(scrubTarget(why, target));
  });
  child.on("error", (err) => {
    if (!exited) events.onExit(scrubTarget(String(err.message), target));
    exited = true;
  });
  let killer: ReturnType<typeof setTimeout> | undefined;

  write(encodeFlvHeader({ hasAudio: true, hasVideo: true }));
  for (const h of opts.headers) write(encodeFlvTag(h));

  return {
    /** One tag of the broadcast: queued, or dropped when the target lags (never awaited). */
    push(tag: FlvTag) {
      if (stopping || exited) return;
      const key = isVideoKeyframe(tag);
      if (waitingForKey) {
        // Codec configurations pass (a new one may come with a reconnecting encoder); media waits for a keyframe.
        if (!key && !isConfig(tag)) return;
        if (key && pending > limit / 2) return;
        if (key) waitingForKey = false;
      } else if (pending > limit) {
        waitingForKey = true;
        dropped++;
        return;
      }
      write(encodeFlvTag(tag));
    },
    /** Times the sender skipped to the next keyframe because the target lagged. */
    get skips() {
      return dropped;
    },
    get backlog() {
      return pending;
    },
    /**
     * Ends it: `graceful` (the broadcast ended) closes ffmpeg's input so it
     * flushes; otherwise (deleted, lease lost) it is terminated. Killed after 1 s either way.
     */
    stop(graceful = false) {
      if (stopping) return;
      stopping = true;
      if (exited) return;
      if (graceful) stdin.end();
      else child.kill("SIGTERM");
      killer = setTimeout(() => child.kill("SIGKILL"), KILL_AFTER_MS);
    },
    get pid() {
      return child.pid;
    },
  };
}

export type OutputSender = ReturnType<typeof startOutputSender>;

function isVideoKeyframe(tag: FlvTag): boolean {
  const p = tag.payload;
  return tag.type === "video" && p[0]! >> 4 === 1 && (p[0]! & 0x0f) === 7 && p[1] === 1;
}

/** Metadata and sequence headers (AVC config, AAC config). */
function isConfig(tag: FlvTag): boolean {
  const p = tag.payload;
  if (tag.type === "data") return true;
  if (tag.type === "video") return (p[0]! & 0x0f) === 7 && p[1] === 0;
  return p[0]! >> 4 === 10 && p[1] === 0;
}
