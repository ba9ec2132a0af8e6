/**
 * The route template Elysia matched for a request (`/api/public/v1/videos/:id/`),
 * kept on the request itself so code outside the app's hooks (the access log
 * and metrics of src/ops) can read it after the response. Registered first in
 * create-app.ts, as a global onTransform hook: hooks reach only routes
 * registered after them, and onTransform runs once routed, before validation
 * (so a 422 carries its route too).
 */
const ROUTE = Symbol("matchedRoute");

export function markRoute(ctx: { request: Request; route: string }): void {
  (ctx.request as Request & { [ROUTE]?: string })[ROUTE] = ctx.route;
}

/** The matched template, or undefined when the request was answered before routing (onRequest) or matched nothing. */
export function matchedRoute(request: Request): string | undefined {
  return (request as Request & { [ROUTE]?: string })[ROUTE];
}
