import { DomainError, InvalidInput } from "../errors.ts";

export { DrmNotAvailable } from "../orgs/errors.ts";
export { InvalidInput, NotFound } from "../errors.ts";

/** The organization's share or the whole pool of live slots is taken. Retry once a stream ends. */
export class NoSlotsAvailable extends DomainError {
  readonly code = "NO_SLOTS_AVAILABLE";
  constructor(readonly scope?: "organization" | "pool") {
    super("Live stream capacity is exhausted. Retry shortly.");
  }
}

/** `scheduled_at` is not a strict, real, near-enough instant; `reason` is parseScheduledAt's error. */
export class InvalidScheduledAt extends InvalidInput {
  constructor(reason: string) {
    super({ scheduled_at: reason });
  }
}
