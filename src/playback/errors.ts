import { DomainError, InvalidInput } from "../errors.ts";

export { NotFound } from "../errors.ts";

/** Signing keys per organization (`POST /signing-keys/` refuses the 11th). */
export const MAX_SIGNING_KEYS = 10;
/** Domains in one restriction's `allowed_domains`. */
export const MAX_ALLOWED_DOMAINS = 10;

/** The organization already has its maximum of signing keys. */
export class SigningKeyLimit extends InvalidInput {
  constructor() {
    super({ signing_keys: `at most ${MAX_SIGNING_KEYS} signing keys per organization: delete one first` });
  }
}

/** `playback_restriction_id` names no restriction of this organization. */
export class UnknownRestriction extends InvalidInput {
  constructor() {
    super({ playback_restriction_id: "no playback restriction of this organization has this id" });
  }
}

/**
 * A media request refused by the asset's playback rules: `details` names the
 * reason, keyed by what failed (`token`, `referrer`, `playback_restriction_id`).
 */
export class PlaybackRefused extends DomainError {
  readonly code = "PERMISSION_DENIED";
  constructor(details: Record<string, string>) {
    super("Playback refused: this media needs a valid playback token or an allowed referrer.", details);
  }
}
