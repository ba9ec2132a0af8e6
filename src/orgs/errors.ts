import { DomainError, NotFound } from "../errors.ts";

export class OrgNotFound extends NotFound {
  constructor(readonly orgId: string) {
    super(`No organization ${orgId}.`);
  }
}

/** One live key per organization: a second is refused until the first is revoked (or expires). */
export class ApiKeyExists extends DomainError {
  readonly code = "API_KEY_EXISTS";
  constructor() {
    super("The organization already has an active API key. Revoke it first.");
  }
}

/** DRM was asked for (a video or a live stream) but the organization's plan lacks the feature. */
export class DrmNotAvailable extends DomainError {
  readonly code = "DRM_NOT_AVAILABLE";
  constructor() {
    super("DRM is not available on the organization's plan.");
  }
}
