import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { Rung } from "../types.ts";

export const FIXTURES = path.resolve(import.meta.dir, "../../../fixtures");
export const fixture = (name: string) => path.join(FIXTURES, name);

/** Low bitrates keep test encodes fast; heights mirror a real ladder. */
export const rung = (height: number, videoBitrateKbps = 200, audioBitrateKbps = 48): Rung => ({
  name: `${height}p`,
  height,
  videoBitrateKbps,
  audioBitrateKbps,
});
export const SHORT_LADDER: Rung[] = [rung(144, 100), rung(240, 150), rung(360, 250)];
export const WIDE_LADDER: Rung[] = [rung(360, 300, 48), rung(720, 700, 64), rung(1080, 1500, 96)];

export function tempOutDir(label: string): string {
  return fs.mkdtempSync(path.join(os.tmpdir(), `transcoder-${label}-`));
}

export function removeDir(dir: string): void {
  fs.rmSync(dir, { recursive: true, force: true });
}
