const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** URL-safe random string; 62^n possibilities, no modulo bias (rejection sampling). */
export function randomToken(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 248 && out.length < length) out += ALPHABET[b % 62];
    }
  }
  return out;
}

export type IdPrefix = "vid" | "ls" | "whk" | "dlv" | "org" | "evt" | "key" | "job" | "wrk" | "upl" | "sk" | "pbr" | "out";

/** Prefixed public ids (DESIGN "Ids"): `vid_…`, `ls_…`, … 20 random characters ≈ 119 bits. */
export function newId(prefix: IdPrefix): string {
  return `${prefix}_${randomToken(20)}`;
}
