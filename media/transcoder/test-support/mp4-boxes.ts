import * as fs from "node:fs";

/** The types of an MP4 file's top-level boxes, in file order (`faststart`: `moov` before `mdat`). */
export function topLevelBoxes(file: string): string[] {
  const bytes = fs.readFileSync(file);
  const types: string[] = [];
  let at = 0;
  while (at + 8 <= bytes.length) {
    let size = bytes.readUInt32BE(at);
    const type = bytes.toString("latin1", at + 4, at + 8);
    if (size === 1) size = Number(bytes.readBigUInt64BE(at + 8));
    else if (size === 0) size = bytes.length - at;
    types.push(type);
    if (size < 8) break;
    at += size;
  }
  return types;
}
