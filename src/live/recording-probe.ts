import { probeFlvFile, type FlvProbe } from "../../media/flv/flv-probe.ts";

/** Probes a recording on disk; a missing file is an empty recording (no publisher ever sent media). */
export async function probeRecording(path: string): Promise<FlvProbe & { hasMedia: boolean }> {
  try {
    const p = await probeFlvFile(path);
    return { ...p, hasMedia: p.hasVideo || p.hasAudio };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    return {
      width: null,
      height: null,
      resolution: null,
      videoCodec: null,
      audioCodec: null,
      audioSampleRate: null,
      audioChannels: null,
      hasVideo: false,
      hasAudio: false,
      durationSeconds: 0,
      tags: 0,
      hasMedia: false,
    };
  }
}
