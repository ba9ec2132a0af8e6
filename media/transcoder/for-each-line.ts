/**
 * Calls `fn` with each line of a child's output as it arrives. `\r` counts as
 * a break too: ffmpeg ends its classic stats lines with it.
 */
export async function forEachLine(stream: ReadableStream<Uint8Array>, fn: (line: string) => void): Promise<void> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of stream) {
    buffered += decoder.decode(chunk, { stream: true });
    const parts = buffered.split(/\r\n|\n|\r/);
    buffered = parts.pop() ?? "";
    for (const p of parts) fn(p);
  }
  buffered += decoder.decode();
  if (buffered !== "") fn(buffered);
}
