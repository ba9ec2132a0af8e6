/**
 * A synthetic 720p30 H.264 + AAC source of `seconds` (ffmpeg's testsrc2 and a
 * sine), the input the transcode benches share. Needs ffmpeg on PATH.
 */
export function makeTestSource(path: string, seconds: number, o: { size?: string; preset?: string } = {}): string {
  const video = `testsrc2=duration=${seconds}:size=${o.size ?? "1280x720"}:rate=30`;
  const audio = `sine=frequency=440:duration=${seconds}`;
  const args = ["-v", "error", "-y", "-f", "lavfi", "-i", video, "-f", "lavfi", "-i", audio];
  const codecs = ["-c:v", "libx264", "-preset", o.preset ?? "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"];
  const res = Bun.spawnSync(["ffmpeg", ...args, ...codecs, path]);
  if (res.exitCode !== 0) throw new Error(`ffmpeg could not make the test source: ${res.stderr.toString()}`);
  return path;
}
