import { mkdir, rm } from "node:fs/promises";
import { join, normalize, sep } from "node:path";
import type { ServerSecret } from "../secrets/server-secret.ts";

/**
 * Where files live under DATA_DIR. Media is served from /media/<token>/…,
 * where the token is an HMAC of the owner's id under the server secret:
 * unguessable, stable across restarts and processes, and needs no column.
 * Originals (the source as received) live outside the served tree, in
 * originals/<owner id>/, and are never served.
 */
export function createMediaStore(opts: { dataDir: string; baseUrl: () => string; secret: ServerSecret }) {
  const mediaRoot = join(opts.dataDir, "media");
  const workRoot = join(opts.dataDir, "work");
  const uploadRoot = join(opts.dataDir, "uploads");
  const originalRoot = join(opts.dataDir, "originals");

  const tokenFor = (ownerId: string) => opts.secret.sign("media-path", ownerId).slice(0, 40);

  return {
    dataDir: opts.dataDir,
    mediaRoot,
    tokenFor,
    /** The kept source of a video: not under mediaRoot, so no URL reaches it. */
    originalDir: (ownerId: string) => join(originalRoot, ownerId),
    mediaDir: (ownerId: string) => join(mediaRoot, tokenFor(ownerId)),
    workDir: (ownerId: string) => join(workRoot, ownerId),
    uploadPath: (uploadId: string) => join(uploadRoot, uploadId),
    uploadRoot,
    /** Public URL of a file inside an owner's media dir. */
    url: (ownerId: string, relative: string) => `${opts.baseUrl()}/media/${tokenFor(ownerId)}/${relative.split(sep).join("/")}`,

    /** Resolves a served path to a file inside the media root, or null on traversal attempts. */
    resolveServed(token: string, relative: string): string | null {
      if (!/^[0-9a-f]{40}$/.test(token)) return null;
      const base = join(mediaRoot, token);
      const full = normalize(join(base, relative));
      return full.startsWith(base + sep) ? full : null;
    },

    async ensure(dir: string) {
      await mkdir(dir, { recursive: true });
      return dir;
    },

    async remove(ownerId: string) {
      await rm(join(mediaRoot, tokenFor(ownerId)), { recursive: true, force: true });
      await rm(join(workRoot, ownerId), { recursive: true, force: true });
      await rm(join(originalRoot, ownerId), { recursive: true, force: true });
    },
  };
}

export type MediaStore = ReturnType<typeof createMediaStore>;
