import { abortReason } from './abort-reason.ts';
import { createTail, type FfmpegRunner, type RunOutcome, type RunRequest } from './ffmpeg-runner.ts';

/** Runs the system's ffmpeg/ffprobe; abort or timeout kills the process. */
export function createNativeRunner(binaries: { ffmpeg?: string; ffprobe?: string } = {}): FfmpegRunner {
  return {
    backend: 'native',
    toolPaths: (files) => files,
    run: (req) => runNative(req.tool === 'ffmpeg' ? (binaries.ffmpeg ?? 'ffmpeg') : (binaries.ffprobe ?? 'ffprobe'), req),
  };
}

async function runNative(bin: string, req: RunRequest): Promise<RunOutcome> {
  if (req.signal.aborted) throw abortReason(req.signal);
  const proc = Bun.spawn([bin, ...req.args], { stdin: 'ignore', stdout: 'pipe', stderr: 'pipe' });
  const kill = () => proc.kill('SIGKILL');
  req.signal.addEventListener('abort', kill, { once: true });
  try {
    const tail = createTail();
    const stdoutChunks: string[] = [];
    await Promise.all([
      forEachLine(proc.stdout, (line) => {
        stdoutChunks.push(line);
        req.onLine?.(line, 'stdout');
      }),
      forEachLine(proc.stderr, (line) => {
        tail.push(line);
        req.onLine?.(line, 'stderr');
      }),
    ]);
    const exitCode = await proc.exited;
    if (req.signal.aborted) throw abortReason(req.signal);
    return { exitCode, stdout: stdoutChunks.join('\n'), stderrTail: tail.lines };
  } finally {
    req.signal.removeEventListener('abort', kill);
  }
}

async function forEachLine(stream: ReadableStream<Uint8Array>, fn: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = '';
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    // ffmpeg ends its classic stats lines with \r, so treat it as a break too.
    const parts = buffered.split(/\r\n|\n|\r/);
    buffered = parts.pop() ?? '';
    for (const p of parts) fn(p);
  }
  buffered += decoder.decode();
  if (buffered !== '') fn(buffered);
}
