/** Test-only helpers that shell out to the native ffprobe as an independent referee. */

export async function ffprobeJson(path: string, args: string[]): Promise<any> {
  const proc = Bun.spawn(['ffprobe', '-v', 'error', '-of', 'json', ...args, path], { stdout: 'pipe', stderr: 'pipe' });
  const [out, err, code] = await Promise.all([
    new Response(proc.stdout).text(),
    new Response(proc.stderr).text(),
    proc.exited,
  ]);
  if (code !== 0) throw new Error(`ffprobe failed (${code}) on ${path}: ${err}`);
  return JSON.parse(out);
}

export async function ffprobePacketCounts(path: string): Promise<{ audio: number; video: number }> {
  const j = await ffprobeJson(path, ['-show_entries', 'packet=codec_type']);
  const c = { audio: 0, video: 0 };
  for (const p of j.packets ?? []) if (p.codec_type === 'audio' || p.codec_type === 'video') c[p.codec_type as 'audio' | 'video']++;
  return c;
}

export async function ffprobePackets(
  path: string,
): Promise<Array<{ codec_type: string; pts: number; dts: number; size: string; flags: string }>> {
  const j = await ffprobeJson(path, ['-show_entries', 'packet=codec_type,pts,dts,size,flags']);
  return j.packets ?? [];
}
