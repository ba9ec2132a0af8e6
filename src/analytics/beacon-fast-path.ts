import { dependencyFailure } from "../dependency-errors.ts";
import { ApiError } from "../http/api-error.ts";
import { routedPath } from "../http/canonical-request.ts";
import { domainErrorResponse } from "../http/domain-error-map.ts";
import { errorResponse } from "../http/envelope.ts";
import { markRoute } from "../http/matched-route.ts";
import type { Logger } from "../log.ts";
import { BEACONS_PATH, type BeaconIntake } from "./beacon-intake.ts";

interface Handled {
  handle: (request: Request) => Promise<Response>;
  server: { requestIP(r: Request): { address: string } | null } | null;
}

/**
 * `POST` and `OPTIONS /beacons/` answered before the Elysia app routes them
 * (issue 28's intake target, docs/decisions.md): the same intake, the same
 * answers, the route marked for the access log and metrics (src/ops wraps
 * this handle too); an unexpected error is answered as the app's onError
 * would (503 for a dependency, else 500). Any other method or path goes to
 * the app as before (its 405 for `GET /beacons/`).
 */
export function answerBeaconsFirst(app: Handled, intake: BeaconIntake, logger: Logger): void {
  const inner = app.handle;
  app.handle = (request: Request) => {
    if ((request.method !== "POST" && request.method !== "OPTIONS") || routedPath(request.url) !== BEACONS_PATH) return inner(request);
    markRoute({ request, route: BEACONS_PATH });
    return intake(request, app.server?.requestIP(request)?.address).catch((error: unknown) => {
      const down = dependencyFailure(error);
      if (down) {
        logger.warn("Dependency unavailable", { dependency: down.dependency, err: error, method: request.method, path: BEACONS_PATH });
        return domainErrorResponse(down);
      }
      logger.error("Unhandled error in request", { err: error, method: request.method, url: request.url });
      return errorResponse(new ApiError("INTERNAL_ERROR"));
    });
  };
}
