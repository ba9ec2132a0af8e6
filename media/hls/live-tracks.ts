import type { FlvMediaEvent } from "./flv-media-event.ts";
import { audioTrackConfig, sameBytes, videoTrackConfig, type AudioTrackConfig, type VideoTrackConfig } from "./track-config.ts";

/**
 * The FLV side of the live packager, without I/O: which tracks the stream has,
 * their configs (including mid-stream changes), and one timeline on which frames
 * are checked, re-framed and handed out in seconds. The packager owns mediabunny
 * and the files; this owns everything it must decide before a packet exists.
 */

/** A media tag as the packager queues it: payload copied, with the Date.now() it was pushed at. */
export type MediaEvent = Extract<FlvMediaEvent, { kind: "video" | "audio" }> & { arrivalMs: number };

/** A frame ready for mediabunny. Times are seconds since the stream's first keyframe (first audio frame if audio-only). */
export interface TimedFrame {
  track: "video" | "audio";
  data: Uint8Array;
  /** Always true for audio. */
  isKeyframe: boolean;
  /** Presentation time. */
  t: number;
  /** Real decode time (FLV's timestamp); mediabunny has no input for it (see ts-dts-rewrite.ts). */
  dts: number;
  duration: number;
  /** A segment may start here: keyframes, or every frame if audio-only. */
  cutPoint: boolean;
}

export type WarnOnce = (key: string, message: string, fields?: Record<string, unknown>) => void;

export interface LiveTracksInfo {
  size: { width: number; height: number } | null;
  hasVideo: boolean;
  hasAudio: boolean;
  videoCodec: string | null;
  audioCodec: string | null;
}

export interface LiveTracks {
  onVideoConfig(record: Uint8Array): void;
  onAudioConfig(asc: Uint8Array): void;
  /** Keeps a frame that arrived before the tracks were locked. */
  buffer(ev: MediaEvent): void;
  /** Both sequence headers seen, or `probeMs` of media (or a full buffer) with one. */
  ready(): boolean;
  /** Whether any sequence header was seen. */
  any(): boolean;
  /** Fixes the set of tracks: later sequence headers of a missing track are ignored. */
  lock(): { video: VideoTrackConfig | null; audio: AudioTrackConfig | null };
  /** The buffered frames, oldest first; the buffer is emptied. */
  takeBuffered(): MediaEvent[];
  /** Puts a frame of a locked track on the timeline; null if it must be dropped. */
  frame(ev: MediaEvent): TimedFrame | null;
  info(): LiveTracksInfo;
}

const PROBE_MAX_EVENTS = 2000;

export function createLiveTracks(options: { probeMs: number; warnOnce: WarnOnce; logger?: { info?(message: string): void } }): LiveTracks {
  const { probeMs, warnOnce, logger } = options;
  let locked = false;
  let video: VideoTrackConfig | null = null;
  let audio: AudioTrackConfig | null = null;
  let withVideo = false;
  let withAudio = false;
  const probe: MediaEvent[] = [];

  // Timeline: FLV milliseconds minus baseMs become mediabunny seconds.
  let baseMs: number | null = null;
  let firstKeyPtsMs = 0;
  let lastVideoDtsMs = -Infinity;
  let videoPtsMax = -Infinity;
  let videoPtsMaxBeforeKey = -Infinity;
  let lastAudioMs = -Infinity;
  let videoFrameSeconds = 1 / 30;
  // The NAL length size mediabunny parses with vs. the one packets currently use
  // (they differ only if a mid-stream sequence header changed it).
  let muxNalLengthSize = 4;
  let packetNalLengthSize = 4;
  let inbandParameterSets: Uint8Array[] | null = null;
  // Picture size after a mid-stream change (info() reports what is being sent now).
  let currentSize: { width: number; height: number } | null = null;

  function onVideoConfig(record: Uint8Array): void {
    let config: VideoTrackConfig;
    try {
      config = videoTrackConfig(record);
    } catch (err) {
      warnOnce("bad-video-config", "unusable AVC sequence header, ignored", { error: String(err) });
      return;
    }
    if (!locked) {
      video = config;
      return;
    }
    if (!withVideo) {
      warnOnce("late-video", "video started after the stream was set up audio-only; video ignored");
      return;
    }
    if (sameBytes(config.avc.record, video!.avc.record)) return;
    // mediabunny keeps the first decoder config for the whole output. For TS it
    // prepends that SPS/PPS to every keyframe; putting the new ones after them
    // in-band makes decoders use the new ones (the last SPS/PPS with an id wins).
    const old = video!;
    if (config.sps.width !== old.sps.width || config.sps.height !== old.sps.height) {
      warnOnce("resolution-change", "resolution changed mid-stream; some players will not follow", {
        from: `${old.sps.width}x${old.sps.height}`,
        to: `${config.sps.width}x${config.sps.height}`,
      });
    } else {
      logger?.info?.("live HLS: AVC sequence header changed mid-stream; sending new SPS/PPS in-band");
    }
    packetNalLengthSize = config.avc.nalLengthSize;
    inbandParameterSets = [...config.avc.sps, ...config.avc.pps];
    video = { ...config, decoderConfig: old.decoderConfig };
    currentSize = { width: config.sps.width, height: config.sps.height };
  }

  function onAudioConfig(asc: Uint8Array): void {
    let config: AudioTrackConfig;
    try {
      config = audioTrackConfig(asc);
    } catch (err) {
      warnOnce("bad-audio-config", "unusable AAC sequence header, ignored", { error: String(err) });
      return;
    }
    if (!locked) {
      audio = config;
      return;
    }
    if (!withAudio) {
      warnOnce("late-audio", "audio started after the stream was set up video-only; audio ignored");
      return;
    }
    if (!sameBytes(config.aac.description, audio!.aac.description)) {
      warnOnce("audio-config-change", "AAC config changed mid-stream; keeping the first one", {
        from: audio!.decoderConfig.codec,
        to: config.decoderConfig.codec,
      });
    }
  }

  function frame(ev: MediaEvent): TimedFrame | null {
    if (ev.kind === "video") {
      if (!withVideo || !video) return null;
      if (baseMs === null) {
        if (!ev.isKeyframe) return null; // nothing decodable before the first keyframe
        baseMs = ev.dtsMs;
        firstKeyPtsMs = ev.ptsMs;
      }
      // mediabunny rejects (and we would corrupt the stream with) time going backwards.
      if (ev.dtsMs < lastVideoDtsMs) {
        warnOnce("video-dts-backwards", "video timestamp went backwards; frame dropped", { dtsMs: ev.dtsMs, lastVideoDtsMs });
        return null;
      }
      const floor = ev.isKeyframe ? videoPtsMax : videoPtsMaxBeforeKey;
      if (ev.ptsMs < floor) {
        warnOnce("video-pts-gop", "frame shown before the previous GOP ended (open GOP?); dropped", { ptsMs: ev.ptsMs });
        return null;
      }
      if (ev.isKeyframe) videoPtsMaxBeforeKey = videoPtsMax;
      videoPtsMax = Math.max(videoPtsMax, ev.ptsMs);
      if (ev.dtsMs > lastVideoDtsMs && lastVideoDtsMs > -Infinity) videoFrameSeconds = (ev.dtsMs - lastVideoDtsMs) / 1000;
      lastVideoDtsMs = ev.dtsMs;

      let data = ev.data;
      if (packetNalLengthSize !== muxNalLengthSize || (ev.isKeyframe && inbandParameterSets)) {
        data = reframe(data, packetNalLengthSize, muxNalLengthSize, ev.isKeyframe ? inbandParameterSets : null);
      }
      const t = (ev.ptsMs - baseMs) / 1000;
      const dts = (ev.dtsMs - baseMs) / 1000;
      return { track: "video", data, isKeyframe: ev.isKeyframe, t, dts, duration: videoFrameSeconds, cutPoint: ev.isKeyframe };
    }
    if (!withAudio || !audio) return null;
    if (withVideo) {
      // Audio before the first keyframe would start the first segment without a picture.
      if (baseMs === null || ev.dtsMs < firstKeyPtsMs) return null;
    } else {
      baseMs ??= ev.dtsMs;
    }
    if (ev.dtsMs < lastAudioMs) {
      warnOnce("audio-backwards", "audio timestamp went backwards; frame dropped", { dtsMs: ev.dtsMs, lastAudioMs });
      return null;
    }
    lastAudioMs = ev.dtsMs;
    const t = (ev.dtsMs - baseMs) / 1000;
    return { track: "audio", data: ev.data, isKeyframe: true, t, dts: t, duration: audio.frameDuration, cutPoint: !withVideo };
  }

  return {
    onVideoConfig,
    onAudioConfig,
    buffer(ev) {
      probe.push(ev);
      if (probe.length > PROBE_MAX_EVENTS && !video && !audio) probe.shift();
    },
    ready() {
      if (video && audio) return true;
      if (!video && !audio) return false;
      const first = probe[0];
      const last = probe[probe.length - 1];
      return !!first && !!last && (last.dtsMs - first.dtsMs >= probeMs || probe.length >= PROBE_MAX_EVENTS);
    },
    any: () => !!video || !!audio,
    lock() {
      locked = true;
      withVideo = !!video;
      withAudio = !!audio;
      if (video) muxNalLengthSize = packetNalLengthSize = video.avc.nalLengthSize;
      return { video, audio };
    },
    takeBuffered: () => probe.splice(0),
    frame,
    info() {
      return {
        size: currentSize ?? (video ? { width: video.sps.width, height: video.sps.height } : null),
        hasVideo: locked ? withVideo : !!video,
        hasAudio: locked ? withAudio : !!audio,
        videoCodec: video?.decoderConfig.codec ?? null,
        audioCodec: audio?.decoderConfig.codec ?? null,
      };
    },
  };
}

/** Re-frames length-prefixed NAL units to another prefix size, optionally prepending parameter sets. */
function reframe(data: Uint8Array, fromSize: number, toSize: number, prepend: Uint8Array[] | null): Uint8Array {
  const units: Uint8Array[] = [...(prepend ?? [])];
  let o = 0;
  while (o + fromSize <= data.length) {
    let len = 0;
    for (let i = 0; i < fromSize; i++) len = len * 256 + data[o + i]!;
    o += fromSize;
    units.push(data.subarray(o, Math.min(o + len, data.length)));
    o += len;
  }
  const out = new Uint8Array(units.reduce((n, u) => n + toSize + u.length, 0));
  let w = 0;
  for (const u of units) {
    for (let i = toSize - 1; i >= 0; i--) out[w++] = Math.floor(u.length / 256 ** i) & 0xff;
    out.set(u, w);
    w += u.length;
  }
  return out;
}
