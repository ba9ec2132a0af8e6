import { rm, stat } from "node:fs/promises";
import { join } from "node:path";
import type { Candidate, RuleFiles } from "./retention-rules.ts";

/** A partial file written this recently belongs to a PATCH under way (one longer than the upload TTL): kept. */
const ACTIVE_GRACE_MS = 10 * 60_000;

/**
 * The files of abandoned resumable uploads (tusUploadsRule): `<id>` (the
 * bytes so far) and `<id>.json` (tus's record of it) in DATA_DIR/uploads/tus/
 * (src/videos/tus-uploads.ts `tusDirectory`). They are on the disk of the
 * process that received the upload, in every storage mode.
 */
export function tusUploadFiles(dataDir: string): RuleFiles {
  const dir = join(dataDir, "uploads", "tus");
  return {
    target: "tus_files",
    async remove(batch: Candidate[], cutoff: number) {
      const deletable: Candidate[] = [];
      let removed = 0;
      for (const c of batch) {
        const data = join(dir, String(c.key));
        const written = await stat(data).then(
          (s) => s.mtimeMs,
          () => null,
        );
        if (written !== null && written >= cutoff - ACTIVE_GRACE_MS) continue;
        for (const path of [data, `${data}.json`]) {
          const there = await stat(path).then(
            () => true,
            () => false,
          );
          if (!there) continue;
          await rm(path, { force: true });
          removed++;
        }
        deletable.push(c);
      }
      return { deletable, removed };
    },
  };
}
