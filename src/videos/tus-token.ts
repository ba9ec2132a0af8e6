import type { ServerSecret } from "../secrets/server-secret.ts";

/** Its own purpose: a presigned PUT's `sig` never opens a tus upload, and the other way round. */
const PURPOSE = "tus-upload";

/**
 * The presigned token of a resumable upload: `<upload id>.<expires, epoch s>.<HMAC tag>`,
 * handed out with the upload slot by POST /videos/upload-url/ (`tus_url`). It names one
 * slot, so it creates at most one upload (the slot is claimed once) and then authorizes
 * that upload's HEAD, PATCH and DELETE only.
 */
export function tusToken(secret: ServerSecret, uploadId: string, expires: number): string {
  return `${uploadId}.${expires}.${secret.sign(PURPOSE, `${uploadId}.${expires}`)}`;
}

/** The slot a token names when its tag is right (checked in constant time), else null; the expiry is the caller's to judge. */
export function readTusToken(secret: ServerSecret, raw: string | null): { uploadId: string; expires: number } | null {
  if (!raw) return null;
  const m = /^(upl_[0-9A-Za-z]+)\.(\d{1,12})\.([0-9a-f]{64})$/.exec(raw);
  if (!m) return null;
  const [, uploadId, exp, tag] = m as unknown as [string, string, string, string];
  if (!secret.verify(PURPOSE, `${uploadId}.${exp}`, tag)) return null;
  return { uploadId, expires: Number(exp) };
}
