import { emptyFlvProbe, type FlvProbe, probeFlvFile } from "../../media/flv/flv-probe.ts";

/** Probes a recording on disk; a missing file is an empty recording (no publisher ever sent media). */
export async function probeRecording(path: string): Promise<FlvProbe & { hasMedia: boolean }> {
  try {
    const p = await probeFlvFile(path);
    return { ...p, hasMedia: p.hasVideo || p.hasAudio };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ENOENT") throw err;
    return { ...emptyFlvProbe(), hasMedia: false };
  }
}
