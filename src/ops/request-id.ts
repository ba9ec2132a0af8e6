/** A caller's id is kept when it is safe to log and echo: short, and only characters that need no escaping anywhere. */
const SANE = /^[A-Za-z0-9._-]{1,128}$/;

/** The request's `X-Request-Id` when sane (a proxy's or client's id, so one id follows the request across hops), else a new one. */
export function requestIdFrom(header: string | null): string {
  return header !== null && SANE.test(header) ? header : crypto.randomUUID();
}
