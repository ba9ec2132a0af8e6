import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, decodeSecretKey } from "../config.ts";

export interface ServerSecret {
  /** Hex HMAC-SHA256 of `message` under a key derived for `purpose` (so one purpose's tags never verify for another). */
  sign(purpose: string, message: string): string;
  /** Constant-time check of a tag, or of its first `length` hex digits when tags are truncated. */
  verify(purpose: string, message: string, tag: string, length?: number): boolean;
  /** 32 bytes for `purpose`, e.g. an AES key. */
  derive(purpose: string): Buffer;
}

/**
 * The service's own secret: `SECRET_KEY` (hex or base64, ≥ 32 bytes; required
 * when several processes share one database) or a key file created on first
 * start in DATA_DIR with mode 0600.
 */
export function loadServerSecret(dataDir: string, envValue?: string): ServerSecret {
  let master: Buffer;
  if (envValue) {
    master = decodeSecretKey(envValue);
  } else {
    const file = join(dataDir, "secret.key");
    if (!existsSync(file)) {
      mkdirSync(dataDir, { recursive: true });
      writeFileSync(file, randomBytes(32).toString("hex"), { mode: 0o600, flag: "wx" });
    }
    chmodSync(file, 0o600);
    // A truncated or edited key file decoded to a short (even empty) HMAC key and the service ran on it: refuse instead.
    const text = readFileSync(file, "utf8").trim();
    if (!/^[0-9a-f]{64,}$/i.test(text)) throw new ConfigError(`${file} must hold at least 64 hex digits (restore it from a backup, or set SECRET_KEY)`);
    master = Buffer.from(text, "hex");
  }
  const derived = new Map<string, Buffer>();
  const derive = (purpose: string) => {
    let k = derived.get(purpose);
    if (!k) {
      k = createHmac("sha256", master).update(`derive:${purpose}`).digest();
      derived.set(purpose, k);
    }
    return k;
  };
  const sign = (purpose: string, message: string) => createHmac("sha256", derive(purpose)).update(message).digest("hex");
  return {
    sign,
    derive,
    verify(purpose, message, tag, length) {
      const expected = Buffer.from(sign(purpose, message).slice(0, length ?? 64));
      const given = Buffer.from(tag);
      return expected.length === given.length && timingSafeEqual(expected, given);
    },
  };
}
