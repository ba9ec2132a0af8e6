/** Independent checks of produced files with the system's ffprobe/ffmpeg. */

export interface ProbedFile {
  formatName: string;
  duration: number;
  streams: Array<{ codec_type: string; codec_name: string; width?: number; height?: number }>;
}

export async function ffprobeFile(file: string): Promise<ProbedFile> {
  const proc = Bun.spawn(['ffprobe', '-v', 'error', '-of', 'json', '-show_format', '-show_streams', file], {
    stdout: 'pipe',
    stderr: 'pipe',
  });
  const [out, exit] = await Promise.all([new Response(proc.stdout).text(), proc.exited]);
  if (exit !== 0) throw new Error(`ffprobe failed on ${file}`);
  const json = JSON.parse(out) as { format: { format_name: string; duration: string }; streams: ProbedFile['streams'] };
  return { formatName: json.format.format_name, duration: Number(json.format.duration), streams: json.streams };
}

export interface DecodeOutcome {
  exitCode: number;
  /** One md5 per decoded video frame, in order. */
  frameHashes: string[];
  stderr: string;
}

/** Decodes the video stream to per-frame md5s, optionally with a CENC key. */
export async function decodeVideoFrames(file: string, decryptionKey?: string): Promise<DecodeOutcome> {
  const args = ['ffmpeg', '-hide_banner', '-nostdin', '-v', 'error'];
  if (decryptionKey) args.push('-decryption_key', decryptionKey);
  args.push('-i', file, '-map', '0:v:0', '-f', 'framemd5', '-');
  const proc = Bun.spawn(args, { stdout: 'pipe', stderr: 'pipe' });
  const [out, err, exitCode] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  const frameHashes = out
    .split('\n')
    .filter((l) => l !== '' && !l.startsWith('#'))
    .map((l) => l.split(',').at(-1)!.trim());
  return { exitCode, frameHashes, stderr: err };
}

/** Whether the first video frame of a file is a keyframe (a segment that can start playback). */
export async function startsWithKeyframe(file: string): Promise<boolean> {
  const proc = Bun.spawn(
    ['ffprobe', '-v', 'error', '-select_streams', 'v:0', '-read_intervals', '%+#1', '-show_entries', 'frame=key_frame,pict_type', '-of', 'json', file],
    { stdout: 'pipe', stderr: 'pipe' },
  );
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const frames = (JSON.parse(out) as { frames?: Array<{ key_frame: number; pict_type: string }> }).frames ?? [];
  return frames[0]?.key_frame === 1 && frames[0].pict_type === 'I';
}
