import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/**
 * Seals small secrets that the service must read back in plaintext (webhook
 * signing secrets): AES-256-GCM, random 96-bit nonce, with an associated
 * value (the owning row's id) so a sealed value copied to another row does
 * not open. Format: `v1.<base64url(nonce | ciphertext | tag)>`.
 */
export interface SecretCipher {
  seal(plaintext: string, associated: string): string;
  open(sealed: string, associated: string): string;
}

export function createSecretCipher(key: Buffer): SecretCipher {
  if (key.length !== 32) throw new Error("The secret cipher needs a 32-byte key");
  return {
    seal(plaintext, associated) {
      const nonce = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, nonce);
      cipher.setAAD(Buffer.from(associated));
      const body = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return `v1.${Buffer.concat([nonce, body, cipher.getAuthTag()]).toString("base64url")}`;
    },
    open(sealed, associated) {
      if (!sealed.startsWith("v1.")) throw new Error("Cannot open a sealed secret: unknown format");
      const raw = Buffer.from(sealed.slice(3), "base64url");
      if (raw.length < 28) throw new Error("Cannot open a sealed secret: too short");
      const decipher = createDecipheriv("aes-256-gcm", key, raw.subarray(0, 12));
      decipher.setAAD(Buffer.from(associated));
      decipher.setAuthTag(raw.subarray(raw.length - 16));
      return Buffer.concat([decipher.update(raw.subarray(12, raw.length - 16)), decipher.final()]).toString("utf8");
    },
  };
}
