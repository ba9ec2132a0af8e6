import { BufferTarget, PathedTarget, type TargetRequest } from "mediabunny";

export type FileSink = (request: TargetRequest, bytes: Uint8Array) => Promise<void>;

/**
 * A mediabunny PathedTarget that collects each file (playlist, segment, init)
 * in memory and hands it whole to `sink` when mediabunny finalizes it. Owning the
 * final write lets us make it atomic and fix bytes up before anyone can read
 * them. mediabunny awaits the sink, so a playlist is only written after the
 * segments it lists are on disk.
 */
export function bufferedPathedTarget(rootPath: string, sink: FileSink): PathedTarget<BufferTarget> {
  return new PathedTarget(rootPath, (request) => new BufferTarget({ onFinalize: (buffer) => sink(request, new Uint8Array(buffer)) }));
}
