/** Whether both `ffmpeg` and `ffprobe` are on PATH (the native backend needs both). */
export function hasNativeFfmpeg(): boolean {
  return Bun.which("ffmpeg") !== null && Bun.which("ffprobe") !== null;
}
