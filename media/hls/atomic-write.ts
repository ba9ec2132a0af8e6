import { rename, unlink, writeFile } from "node:fs/promises";

let counter = 0;

/**
 * Writes via a temp file + rename so an HTTP reader sees either the old file or
 * the whole new one, never a half-written playlist or segment.
 */
export async function writeFileAtomic(path: string, data: Uint8Array | string): Promise<void> {
  const tmp = `${path}.${process.pid}.${++counter}.tmp`;
  try {
    await writeFile(tmp, data);
    await rename(tmp, path);
  } catch (err) {
    await unlink(tmp).catch(() => {});
    throw err;
  }
}
