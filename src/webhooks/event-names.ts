/**
 * The event names of the reference (spec section 6): the only ones an endpoint
 * may subscribe to. The list itself lives in the SDK (packages/client/src/events.ts,
 * which must build on its own and so cannot import from here); the service takes
 * it from there, so there is one list. The SDK type-checks it against the
 * generated document, and the document is made from this list (event-schemas.ts),
 * so a name added to one and not the other fails `tsc` or the sdk-package test.
 */
import { WEBHOOK_EVENT_NAMES } from "../../packages/client/src/events.ts";

export const EVENT_NAMES = WEBHOOK_EVENT_NAMES;

export type EventName = (typeof EVENT_NAMES)[number];

const KNOWN = new Set<string>(EVENT_NAMES);

export function isEventName(name: unknown): name is EventName {
  return typeof name === "string" && KNOWN.has(name);
}
