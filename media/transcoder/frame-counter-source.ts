/**
 * For tests of cuts (clips, issue 27): ffmpeg arguments (after `ffmpeg`) for an MP4 whose frame n is flat grey of
 * luma 16 + lumaStep·n, one keyframe (a cut must decode up to its start), and a tone; a decoded frame says its number.
 */
export function frameCounterSourceArgs(output: string, o: { size: string; fps: number; seconds: number; lumaStep: number }): string[] {
  return [
    "-v",
    "error",
    "-f",
    "lavfi",
    "-i",
    `color=c=black:s=${o.size}:r=${o.fps}:d=${o.seconds},geq=lum='16+${o.lumaStep}*N':cb=128:cr=128,format=yuv420p`,
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=440:duration=${o.seconds}`,
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-g",
    "100",
    "-c:a",
    "aac",
    "-shortest",
    "-y",
    output,
  ];
}
