import * as crypto from "node:crypto";
import { timingSafeEqual } from "node:crypto";

/**
 * argon2id password hashes as PHC strings (`$argon2id$v=19$m=…,t=…,p=…$salt$tag`,
 * the form `Bun.password` writes and verifies), with one twist (issue 23): the
 * accounts of one email share a salt, so a sign-in costs exactly one argon2
 * computation however many accounts the email has (one proven, one per
 * organization that set its own). Counting accounts by the time a wrong
 * password takes would tell an inviter whether the email has an account
 * elsewhere; with one computation it cannot.
 */

/** node:crypto's argon2 (Node 24.7, implemented by Bun 1.4); the installed @types/node predates it. */
type Argon2 = (
  algorithm: "argon2id",
  params: { message: Buffer; nonce: Buffer; memory: number; passes: number; parallelism: number; tagLength: number },
  callback: (err: Error | null, tag: Uint8Array) => void,
) => void;
const argon2 = (crypto as unknown as { argon2: Argon2 }).argon2;

export interface Phc {
  memory: number;
  passes: number;
  parallelism: number;
  salt: Buffer;
  tag: Buffer;
}

const PHC = /^\$argon2id\$v=19\$m=(\d+),t=(\d+),p=(\d+)\$([A-Za-z0-9+/]+)\$([A-Za-z0-9+/]+)$/;

export function parsePhc(encoded: string): Phc | null {
  const m = PHC.exec(encoded);
  if (!m) return null;
  return { memory: Number(m[1]), passes: Number(m[2]), parallelism: Number(m[3]), salt: Buffer.from(m[4]!, "base64"), tag: Buffer.from(m[5]!, "base64") };
}

const b64 = (b: Buffer) => b.toString("base64").replace(/=+$/, "");

export function formatPhc(p: Phc): string {
  return `$argon2id$v=19$m=${p.memory},t=${p.passes},p=${p.parallelism}$${b64(p.salt)}$${b64(p.tag)}`;
}

/** The tag of `password` under `like`'s salt and parameters (one argon2id computation, off the event loop). */
export function tagLike(password: string, like: Phc): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    argon2("argon2id", { message: Buffer.from(password, "utf8"), nonce: like.salt, memory: like.memory, passes: like.passes, parallelism: like.parallelism, tagLength: like.tag.length }, (err, tag) =>
      err ? reject(err) : resolve(Buffer.from(tag)),
    ),
  );
}

/** Same salt and parameters: one computation answers both. */
export function sameSalt(a: Phc, b: Phc): boolean {
  return a.memory === b.memory && a.passes === b.passes && a.parallelism === b.parallelism && a.tag.length === b.tag.length && a.salt.equals(b.salt);
}

export function tagEquals(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && timingSafeEqual(a, b);
}

/** A new hash: under `like`'s salt (another account of the same email) when given, else a fresh random salt. */
export async function hashLike(password: string, like: Phc | null): Promise<string> {
  if (!like) return Bun.password.hash(password, "argon2id");
  return formatPhc({ ...like, tag: await tagLike(password, like) });
}
