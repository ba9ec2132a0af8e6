import { type Dirent, readdirSync } from "node:fs";
import { join } from "node:path";

/** Every file below `root` (recursive); none when it does not exist. */
export function filesUnder(root: string): string[] {
  let entries: Dirent[];
  try {
    entries = readdirSync(root, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries.flatMap((e) => {
    const p = join(root, e.name);
    return e.isDirectory() ? filesUnder(p) : [p];
  });
}
