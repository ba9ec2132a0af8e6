import { mkdir, readdir, rm } from "node:fs/promises";
import { isAbsolute, join, normalize, posix, relative as relativePath, sep } from "node:path";
import type { ServerSecret } from "../secrets/server-secret.ts";
import { createLocalObjectStore } from "./local-object-store.ts";
import type { ObjectStore } from "./object-store.ts";

/**
 * Where files live. Durable files are objects (src/storage/object-store.ts)
 * whose keys are their paths under DATA_DIR in the local layout; the work
 * dir is local scratch space of the process running a fetch or a transcode.
 * Media is served from /media/<token>/…, where the token is an HMAC of the
 * owner's id under the server secret: unguessable, stable across restarts
 * and processes, and needs no column. Originals (the source as received)
 * live outside the served tree, in originals/<owner id>/, and are never served.
 */
export function createMediaStore(opts: { dataDir: string; baseUrl: () => string; secret: ServerSecret; objects?: ObjectStore }) {
  const objects = opts.objects ?? createLocalObjectStore(opts.dataDir);
  const mediaRoot = join(opts.dataDir, "media");
  const workRoot = join(opts.dataDir, "work");
  const uploadRoot = join(opts.dataDir, "uploads");
  const originalRoot = join(opts.dataDir, "originals");

  const tokenFor = (ownerId: string) => opts.secret.sign("media-path", ownerId).slice(0, 40);

  return {
    dataDir: opts.dataDir,
    objects,
    mediaRoot,
    tokenFor,
    /** Object keys (prefixes) of an owner's served media, its kept original, and an upload. */
    mediaKey: (ownerId: string) => `media/${tokenFor(ownerId)}`,
    originalKey: (ownerId: string) => `originals/${ownerId}`,
    uploadKey: (uploadId: string) => `uploads/${uploadId}`,
    /** The kept source of a video in the local layout: not under mediaRoot, so no URL reaches it. */
    originalDir: (ownerId: string) => join(originalRoot, ownerId),
    mediaDir: (ownerId: string) => join(mediaRoot, tokenFor(ownerId)),
    /** Local scratch of a fetch or transcode; never holds anything another process needs. */
    workDir: (ownerId: string) => join(workRoot, ownerId),
    uploadPath: (uploadId: string) => join(uploadRoot, uploadId),
    uploadRoot,
    /** Public URL of a file inside an owner's media dir. */
    url: (ownerId: string, relative: string) => `${opts.baseUrl()}/media/${tokenFor(ownerId)}/${relative.split(sep).join("/")}`,

    /** The object key of a file under DATA_DIR (`recordings/<stream>.flv`, `work/<video>/source.mp4`), or null outside it. */
    keyOf(path: string): string | null {
      const rel = relativePath(opts.dataDir, path);
      if (!rel || rel.startsWith("..") || isAbsolute(rel)) return null;
      return rel.split(sep).join("/");
    },

    /** The object key of a served path (`media/<token>/<path>`), or null for a bad token or a traversal attempt. */
    servedKey(token: string, relative: string): string | null {
      if (!/^[0-9a-f]{40}$/.test(token)) return null;
      if (relative.includes("\0") || relative.includes("\\")) return null;
      const rel = posix.normalize(relative).replace(/^\/+/, "");
      if (rel === "" || rel === "." || rel === ".." || rel.startsWith("../") || rel.endsWith("/")) return null;
      return `media/${token}/${rel}`;
    },

    /** Resolves a served path to a file inside the local media root, or null on traversal attempts. */
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

    /**
     * Work files of an owner: the local scratch and (STORAGE=s3) a fetched source kept in the store between the
     * stages. `keep`: one work object spared (a failed live clip's copy of the recording, its source for a retry).
     */
    async removeWork(ownerId: string, keep?: string) {
      const dir = join(workRoot, ownerId);
      const kept = keep?.startsWith(`work/${ownerId}/`) ? keep : undefined;
      const keptPath = kept ? objects.localPath(kept) : null;
      if (keptPath?.startsWith(dir + sep)) {
        const spared = relativePath(dir, keptPath).split(sep)[0];
        const entries = await readdir(dir).catch(() => [] as string[]);
        for (const name of entries) if (name !== spared) await rm(join(dir, name), { recursive: true, force: true });
      } else await rm(dir, { recursive: true, force: true });
      if (objects.kind === "local") return;
      if (!kept) return void (await objects.deletePrefix(`work/${ownerId}`));
      for await (const o of objects.list(`work/${ownerId}`)) if (o.key !== kept) await objects.delete(o.key);
    },

    /** Everything of an owner: served media, original and work files. */
    async remove(ownerId: string) {
      await objects.deletePrefix(`media/${tokenFor(ownerId)}`);
      await objects.deletePrefix(`originals/${ownerId}`);
      await rm(join(workRoot, ownerId), { recursive: true, force: true });
      if (objects.kind !== "local") await objects.deletePrefix(`work/${ownerId}`);
    },
  };
}

export type MediaStore = ReturnType<typeof createMediaStore>;
