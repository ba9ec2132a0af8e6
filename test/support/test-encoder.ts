/**
 * ffmpeg as a live encoder: a test pattern and a tone, H.264 + AAC, in real
 * time, to `url` as `format` (flv for RTMP, mpegts for SRT).
 */
export function testEncoderArgs(url: string, o: { seconds: number; format: "flv" | "mpegts"; size?: string; rate?: number; preset?: string }): string[] {
  const rate = o.rate ?? 30;
  return [
    "ffmpeg",
    "-v",
    "error",
    "-re",
    "-f",
    "lavfi",
    "-i",
    `testsrc=size=${o.size ?? "640x360"}:rate=${rate}:duration=${o.seconds}`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:sample_rate=48000:duration=${o.seconds}`,
    "-c:v",
    "libx264",
    "-preset",
    o.preset ?? "veryfast",
    "-g",
    String(rate),
    "-pix_fmt",
    "yuv420p",
    "-c:a",
    "aac",
    "-f",
    o.format,
    url,
  ];
}
