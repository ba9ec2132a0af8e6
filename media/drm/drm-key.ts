import { InvalidDrmKeyError } from "./errors.ts";

const HEX32 = /^[0-9a-fA-F]{32}$/;

/** Key id and key of a CENC job: 16 bytes each, as 32 hex digits. */
export interface DrmKey {
  keyId: string;
  key: string;
}

/** Throws InvalidDrmKeyError unless both are 32 hex digits; returns them lower-cased. */
export function checkDrmKey(drm: DrmKey): DrmKey {
  if (!HEX32.test(drm.keyId)) throw new InvalidDrmKeyError("DRM key id must be 32 hex digits");
  // The message never echoes the key, even a malformed one.
  if (!HEX32.test(drm.key)) throw new InvalidDrmKeyError("DRM key must be 32 hex digits");
  return { keyId: drm.keyId.toLowerCase(), key: drm.key.toLowerCase() };
}

/** `0123…cdef` → `01234567-89ab-cdef-0123-456789abcdef`, as in `cenc:default_KID`. */
export function keyIdAsUuid(keyId: string): string {
  const k = keyId.toLowerCase();
  return `${k.slice(0, 8)}-${k.slice(8, 12)}-${k.slice(12, 16)}-${k.slice(16, 20)}-${k.slice(20)}`;
}
