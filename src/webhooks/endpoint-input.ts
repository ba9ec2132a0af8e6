import { InvalidInput } from "../errors.ts";
import { EVENT_NAMES, isEventName, type EventName } from "./event-names.ts";
import { FIELD_PATH, FORBIDDEN_SEGMENTS, hasForbiddenSegment } from "./fields-filter.ts";

export interface EndpointInput {
  url: string;
  events: EventName[];
  fields: string[];
  description: string | null;
}

export const MAX_DESCRIPTION = 200;
const MAX_URL = 2048;
const MAX_FIELDS = 100;

function checkUrl(raw: unknown): string | { error: string } {
  if (typeof raw !== "string" || raw.trim() === "") return { error: "is required: an https URL" };
  if (raw.length > MAX_URL) return { error: `must be at most ${MAX_URL} characters` };
  let url: URL;
  try {
    url = new URL(raw.trim());
  } catch {
    return { error: "must be an absolute https URL" };
  }
  if (url.protocol !== "https:") return { error: "must use https (http and other schemes are rejected)" };
  // Credentials in a URL end up in logs and dashboards; receivers verify the signature instead.
  if (url.username || url.password) return { error: "must not contain credentials" };
  if (url.hash) return { error: "must not contain a fragment" };
  return url.toString();
}

function unique<T>(list: T[]): T[] {
  return [...new Set(list)];
}

/** Spec 2.3, field by field; every failing field is reported at once (InvalidInput, 422 VALIDATION_ERROR at the edge). */
export function parseEndpointInput(body: unknown): EndpointInput {
  const b = (body && typeof body === "object" ? body : {}) as Record<string, unknown>;
  const details: Record<string, string> = {};

  const url = checkUrl(b.url);
  if (typeof url !== "string") details.url = url.error;

  let events: EventName[] = [];
  if (!Array.isArray(b.events) || b.events.length === 0) {
    details.events = `must list at least one event name: ${EVENT_NAMES.join(", ")}`;
  } else {
    const unknown = b.events.filter((e) => !isEventName(e));
    if (unknown.length > 0) details.events = `unknown event names: ${unknown.map((e) => JSON.stringify(e)).join(", ")}; known: ${EVENT_NAMES.join(", ")}`;
    else events = unique(b.events as EventName[]);
  }

  let fields: string[] = [];
  if (b.fields !== undefined && b.fields !== null) {
    if (!Array.isArray(b.fields)) details.fields = "must be a list of dot-paths such as video.id";
    else if (b.fields.length > MAX_FIELDS) details.fields = `must list at most ${MAX_FIELDS} paths`;
    else {
      const bad = b.fields.filter((f) => typeof f !== "string" || !FIELD_PATH.test(f));
      const forbidden = b.fields.filter((f) => typeof f === "string" && FIELD_PATH.test(f) && hasForbiddenSegment(f));
      const problems: string[] = [];
      if (bad.length > 0) problems.push(`must be dot-paths such as video.id; invalid: ${bad.map((f) => JSON.stringify(f)).join(", ")}`);
      if (forbidden.length > 0) problems.push(`must not contain the segments ${[...FORBIDDEN_SEGMENTS].join(", ")}; refused: ${forbidden.map((f) => JSON.stringify(f)).join(", ")}`);
      if (problems.length > 0) details.fields = problems.join("; ");
      else fields = unique(b.fields as string[]);
    }
  }

  let description: string | null = null;
  if (b.description !== undefined && b.description !== null) {
    if (typeof b.description !== "string") details.description = "must be a string";
    else if ([...b.description].length > MAX_DESCRIPTION) details.description = `must be at most ${MAX_DESCRIPTION} characters`;
    else description = b.description;
  }

  if (Object.keys(details).length > 0) throw new InvalidInput(details);
  return { url: url as string, events, fields, description };
}
