import { Elysia } from "elysia";
import type { Permission } from "../orgs/org-settings.ts";
import { ApiError } from "./api-error.ts";
import type { AuthContext } from "./authenticate.ts";

/**
 * The request → caller map is filled by the app's onRequest hook, which
 * authenticates before routing, parsing and validation (so 401 always wins).
 */
export const authByRequest = new WeakMap<Request, AuthContext>();

export function requireAuth(request: Request): AuthContext {
  const auth = authByRequest.get(request);
  // onRequest authenticates every routed /api path, so this should not happen; if a
  // path ever reaches a route without passing it, the answer is still the 401.
  if (!auth) throw new ApiError("INVALID_API_KEY");
  return auth;
}

/**
 * Every route plugin `.use()`s this to get `auth` in its context and the
 * `permission` option. The permission check runs in `transform`, before body
 * validation, so a caller lacking a permission learns that first.
 *
 * A new instance per use, never a module-level one: Elysia keeps the app a
 * plugin was last used by (`getParent`), so a shared instance held the last
 * service's app, server and database for the life of the process (a stopped
 * service's libSQL connections stayed open and locked its file).
 */
export const apiContext = () =>
  new Elysia({ name: "api-context" })
    .derive({ as: "global" }, ({ request }) => ({ auth: requireAuth(request) }))
    .macro({
      permission: (needed: Permission | Permission[]) => ({
        transform({ request }) {
          const { org } = requireAuth(request);
          const list = Array.isArray(needed) ? needed : [needed];
          const missing = list.filter((p) => !org.settings.permissions.includes(p));
          if (missing.length > 0) throw new ApiError("PERMISSION_DENIED", undefined, missing);
        },
      }),
    });

export const API_PREFIX = "/api/public/v1";
