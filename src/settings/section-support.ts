import { DomainError } from "../errors.ts";
import { ApiError } from "../http/api-error.ts";
import { orgLimitFor } from "../http/route-limits.ts";
import type { SettingsDeps } from "./deps.ts";
import { html, type Html } from "./html.ts";
import type { Member } from "./types.ts";

/**
 * What the webhooks, videos and live streams sections share: reading a form
 * the way the API reads JSON, turning the API's refusals into a message on the
 * page, the API's per-organization limits, and time formatting.
 */

export type FormBody = Record<string, string | string[]>;

/** The posted form without the CSRF token (the API's strict inputs refuse fields they do not know). */
export function formOf(body: unknown): FormBody {
  const out: FormBody = Object.create(null);
  if (!body || typeof body !== "object") return out;
  for (const [k, v] of Object.entries(body as Record<string, unknown>)) {
    if (k === "_csrf") continue;
    if (typeof v === "string") out[k] = v;
    else if (Array.isArray(v)) out[k] = v.filter((x): x is string => typeof x === "string");
  }
  return out;
}

/** A repeated field (checkboxes): a form with one checked box posts a string, with several an array. */
export function listOf(v: string | string[] | undefined): string[] {
  if (v === undefined) return [];
  return Array.isArray(v) ? v : [v];
}

/** A single text field: trimmed, and absent when blank (the API reads a missing optional field as not given). */
export function textOf(v: string | string[] | undefined): string | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  const t = s?.trim();
  return t ? t : undefined;
}

/** The object without its undefined values: a body as a JSON client sends it (a missing field, not a null one). */
export function definedOnly(o: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
}

/** A checkbox: checked posts its value ("on" by default), unchecked posts nothing. */
export const checked = (v: string | string[] | undefined): boolean => v !== undefined;

export interface Problem {
  status: number;
  code: string;
  message: string;
  /** Field → what is expected (422 VALIDATION_ERROR), as the API's `error.details`. */
  fields: Record<string, string>;
}

/**
 * The API's refusal (ApiError from the strict inputs, DomainError from the
 * services) as the page shows it: same code, message and per-field details.
 * Anything else is not a refusal and is rethrown.
 */
export function problemOf(err: unknown): Problem {
  if (err instanceof ApiError || err instanceof DomainError) {
    const status = err instanceof ApiError ? err.status : new ApiError(err.code).status;
    const d = err.details;
    const fields: Record<string, string> = {};
    if (d && typeof d === "object" && !Array.isArray(d)) {
      for (const [k, v] of Object.entries(d)) if (typeof v === "string") fields[k] = v;
    }
    return { status, code: err.code, message: err.message, fields };
  }
  throw err;
}

/** The box at the top of a form: the message and each failing field with what it must be. */
export function problemBox(p: Problem | null | undefined): Html {
  if (!p) return html``;
  const list = Object.entries(p.fields);
  return html`<div class="error" role="alert"><p><strong>${p.code}</strong>: ${p.message}</p>${list.length ? html`<ul>${list.map(([k, v]) => html`<li><code>${k}</code> ${v}</li>`)}</ul>` : ""}</div>`;
}

/**
 * The API's per-organization limits (spec section 8) counted in the same
 * buckets as the API's: a screen action and an API call share one allowance.
 * `apiPath` is the API route the action stands for (e.g. "/videos/").
 */
export async function checkOrgLimit(deps: Pick<SettingsDeps, "rateLimiter">, member: Member, apiPath: string): Promise<void> {
  const limit = orgLimitFor("POST", apiPath, member.org.settings.limits);
  if (!limit) return;
  const verdict = await deps.rateLimiter.hit([{ key: `org:${member.org.id}:${limit.name}`, limit: limit.limit }]);
  if (!verdict.ok) throw new ApiError("RATE_LIMITED", `Too many requests: try again in ${verdict.retryAfterSeconds} s.`);
}

/** A moment as a reader wants it (UTC, to the second) inside a machine-readable <time>. */
export function timeOf(at: number | string | null | undefined): Html {
  if (at === null || at === undefined) return html`<span class="muted">—</span>`;
  const d = new Date(at);
  if (Number.isNaN(d.getTime())) return html`<span class="muted">—</span>`;
  const iso = d.toISOString();
  return html`<time datetime="${iso}">${iso.slice(0, 19).replace("T", " ")} UTC</time>`;
}

export function bytesOf(n: string | number | null | undefined): string {
  if (n === null || n === undefined) return "—";
  let v = Number(n);
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (v >= 1000 && i < units.length - 1) {
    v /= 1000;
    i++;
  }
  return `${i === 0 ? v : v.toFixed(1)} ${units[i]}`;
}

const GOOD = new Set(["COMPLETED", "DELIVERED", "READY_TO_STREAM"]);
const BAD = new Set(["ERROR", "ABANDONED", "FAILED"]);

/** A status as a badge; the class colours it (settings.css), the text says it. */
export function badge(status: string): Html {
  const tone = status === "LIVE" ? " live" : GOOD.has(status) ? " ok" : BAD.has(status) ? " error" : "";
  return html`<span class="badge${tone}" data-status="${status}">${status}</span>`;
}

/** An id from a URL: the API's limit (64 characters); longer reads as missing. */
export const plausibleId = (id: string) => id.length > 0 && id.length <= 64;
