import { createSecretCipher, type SecretCipher } from "./secret-cipher.ts";
import type { ServerSecret } from "./server-secret.ts";

/**
 * Domain events at rest: an outbox row's payload and a webhook delivery's
 * body are stored sealed, because the spec delivers secrets in them
 * (LIVESTREAM_SCHEDULED's `rtmp_url` and `stream_key`, a completed video's
 * `download_password`, a DRM licence URL's token). AES-256-GCM under a key
 * derived from the server secret (purpose `event-payloads`), the row's own
 * id as associated data, so a sealed value copied to another row does not
 * open.
 *
 * Rows written before this existed (plaintext) open as they are, and are
 * pruned by retention like the others (docs/decisions.md).
 */
export interface EventSealer {
  /** An outbox row's stored payload. */
  sealPayload(payload: unknown, eventId: string): unknown;
  openPayload(stored: unknown, eventId: string): Record<string, unknown>;
  /** A delivery's stored body (the exact bytes each attempt sends and signs). */
  sealBody(body: string, deliveryId: string): string;
  openBody(stored: string, deliveryId: string): string;
}

/** The stored payload's one key: a real payload is keyed by its entity (`video`, `stream`, …), never by this. */
const SEALED = "$sealed";

function openOrThrow(cipher: SecretCipher, sealed: string, id: string): string {
  try {
    return cipher.open(sealed, id);
  } catch {
    throw new Error(`Cannot open the sealed event ${id}: was SECRET_KEY (or DATA_DIR/secret.key) changed?`);
  }
}

export function createEventSealer(secret: ServerSecret): EventSealer {
  const cipher = createSecretCipher(secret.derive("event-payloads"));
  return {
    sealPayload: (payload, eventId) => ({ [SEALED]: cipher.seal(JSON.stringify(payload), eventId) }),
    openPayload(stored, eventId) {
      const sealed = (stored as Record<string, unknown> | null)?.[SEALED];
      if (typeof sealed !== "string") return stored as Record<string, unknown>;
      return JSON.parse(openOrThrow(cipher, sealed, eventId)) as Record<string, unknown>;
    },
    sealBody: (body, deliveryId) => cipher.seal(body, deliveryId),
    // A body is JSON (it starts with `{`); a sealed one is `v1.…` (secret-cipher.ts).
    openBody: (stored, deliveryId) => (stored.startsWith("v1.") ? openOrThrow(cipher, stored, deliveryId) : stored),
  };
}

/** Stores events as they are: for tools and tests that hold no server secret. */
export const plainEvents: EventSealer = {
  sealPayload: (payload) => payload,
  openPayload: (stored) => stored as Record<string, unknown>,
  sealBody: (body) => body,
  openBody: (stored) => stored,
};
