import type { TSchema } from "elysia";
import { DEFAULT_ERROR_HEADERS } from "./envelope.ts";
import { ERROR_STATUS, type ErrorCode } from "./api-error.ts";

/** Shared OpenAPI components: the envelope every response is wrapped in. */
export const envelopeSchemas = {
  SuccessEnvelope: {
    type: "object",
    required: ["success", "message", "data", "meta"],
    properties: {
      success: { type: "boolean", const: true },
      message: { type: "string", description: "Human-readable; may be reworded, never branch on it." },
      data: { type: "object", description: "The result; its shape is described by the operation." },
      meta: { $ref: "#/components/schemas/Meta" },
    },
  },
  ErrorEnvelope: {
    type: "object",
    required: ["success", "message", "error"],
    properties: {
      success: { type: "boolean", const: false },
      message: { type: "string" },
      error: {
        type: "object",
        required: ["code"],
        properties: {
          code: { type: "string", enum: Object.keys(ERROR_STATUS) },
          details: { description: "PERMISSION_DENIED: the missing permission codenames. VALIDATION_ERROR: field name → message." },
        },
      },
      meta: { $ref: "#/components/schemas/Meta" },
    },
  },
  Meta: {
    type: "object",
    properties: { timestamp: { type: "string", format: "date-time", description: "ISO 8601 UTC with milliseconds." } },
  },
} as const;

const RETRY_AFTER: Partial<Record<ErrorCode, string>> = {
  RATE_LIMITED: "Seconds to wait.",
  NO_SLOTS_AVAILABLE: `Seconds to wait before retrying (${DEFAULT_ERROR_HEADERS.NO_SLOTS_AVAILABLE!["retry-after"]}).`,
  TRANSCODE_QUEUE_FAILED: `Seconds to wait before retrying (${DEFAULT_ERROR_HEADERS.TRANSCODE_QUEUE_FAILED!["retry-after"]}).`,
};

const COMMON: ErrorCode[] = ["INVALID_API_KEY", "RATE_LIMITED", "INTERNAL_ERROR"];

/**
 * `detail` for a route: summary, description, tags and the responses it can
 * give, each as the envelope, so the document lists every status a client sees.
 */
export function doc(opts: { tags: string[]; summary: string; description: string; ok?: 200 | 201; data?: string; errors?: ErrorCode[]; body?: TSchema; bodyRequired?: boolean }) {
  const responses: Record<string, unknown> = {
    [opts.ok ?? 200]: {
      description: opts.data ?? "Success.",
      content: { "application/json": { schema: { $ref: "#/components/schemas/SuccessEnvelope" } } },
    },
  };
  for (const code of [...COMMON, "PERMISSION_DENIED" as const, ...(opts.errors ?? [])]) {
    const status = String(ERROR_STATUS[code]);
    const prev = responses[status] as { description: string } | undefined;
    responses[status] = {
      description: prev ? `${prev.description}, ${code}` : code,
      content: { "application/json": { schema: { $ref: "#/components/schemas/ErrorEnvelope" } } },
      ...(RETRY_AFTER[code] ? { headers: { "Retry-After": { description: RETRY_AFTER[code], schema: { type: "integer" } } } } : {}),
    };
  }
  // The OpenAPI response objects are plain JSON here; Elysia types them more narrowly than needed.
  return { tags: opts.tags, summary: opts.summary, description: opts.description, responses: responses as any, ...(opts.body ? jsonRequestBody(opts.body, opts.bodyRequired ?? true) : {}) };
}

/**
 * The request body of an operation whose body is validated by src/http/input.ts
 * rather than by Elysia (so unknown fields and nulls follow the project's rules).
 */
export function jsonRequestBody(schema: TSchema, required = true) {
  return { requestBody: { required, content: { "application/json": { schema } } } as any };
}
