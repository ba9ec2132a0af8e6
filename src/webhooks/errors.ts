import { InvalidInput } from "../errors.ts";

export { InvalidInput } from "../errors.ts";

/** The organization already has its maximum of endpoints (counted in the registering transaction). */
export class EndpointLimitReached extends InvalidInput {
  constructor(readonly max: number) {
    super({ endpoints: `an organization may have at most ${max} webhook endpoints; delete one before registering another` });
  }
}

/** The endpoint's host resolves to a private, loopback or link-local address. */
export class EndpointUrlRefused extends InvalidInput {
  constructor() {
    super({ url: "must not point to a private, loopback or link-local address" });
  }
}
