/** Test-only helpers: ffprobe (native, or ffmpeg.wasm without it) as an independent referee. */
import { ffprobeJson } from "../test-support/media-tools.ts";

export { closeMediaTools, ffprobeJson } from "../test-support/media-tools.ts";

export async function ffprobePacketCounts(path: string): Promise<{ audio: number; video: number }> {
  const j = await ffprobeJson(path, ["-show_entries", "packet=codec_type"]);
  const c = { audio: 0, video: 0 };
  for (const p of j.packets ?? []) if (p.codec_type === "audio" || p.codec_type === "video") c[p.codec_type as "audio" | "video"]++;
  return c;
}

export async function ffprobePackets(path: string): Promise<Array<{ codec_type: string; pts: number; dts: number; size: string; flags: string }>> {
  const j = await ffprobeJson(path, ["-show_entries", "packet=codec_type,pts,dts,size,flags"]);
  return j.packets ?? [];
}
