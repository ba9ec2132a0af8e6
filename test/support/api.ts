/**
 * The test suites' typed view of the API, from the SDK (packages/client):
 * `ok(res, "getVideo")` reads a response the test expects to succeed as that
 * operation's success body, `failed(res)` as the error envelope (or one
 * operation's error answers), and `sdkClient` is the SDK's client itself.
 * Neither reader asserts anything (the test does): they only type the JSON,
 * so a field the SDK lacks or misnames fails `npm run lint` (tsc), not a user.
 */
// The client's own files, not index.ts: index also exports trackPlayback, browser code this tsconfig (no DOM lib) cannot check.
import { createClient, type VidliveClient } from "../../packages/client/src/client.ts";
import type { operations } from "../../packages/client/src/schema.js";
import type { ApiErrorBody } from "../../packages/client/src/types.ts";

type Json<R> = R extends { content: { "application/json": infer J } } ? J : never;
type Responses<Op extends keyof operations> = operations[Op]["responses"];
type Success = 200 | 201 | 202 | 204;

/** An operation of the API by its operationId (`getVideo`, `createLivestream`, …). */
export type OperationId = keyof operations;

/** An operation's success body (any 2xx), as the SDK types it. */
export type Ok<Op extends keyof operations> = { [S in keyof Responses<Op>]: S extends Success ? Json<Responses<Op>[S]> : never }[keyof Responses<Op>];
/** An operation's error answers (any non-2xx), as the SDK types them. */
export type Failed<Op extends keyof operations> = { [S in keyof Responses<Op>]: S extends Success ? never : Json<Responses<Op>[S]> }[keyof Responses<Op>];
/** The error envelope with `details` of a shape the test knows (VALIDATION_ERROR: field → message). */
export type ApiError<D = Record<string, unknown>> = Omit<ApiErrorBody, "error"> & { error: Omit<ApiErrorBody["error"], "details"> & { details: D } };

/**
 * A body read before the test looks at the status (helpers answering
 * `{status, body}`): the success body's fields and the error envelope's, so
 * the test reads whichever its status says.
 */
export type Answer<Op extends keyof operations, D = Record<string, unknown>> = Omit<Ok<Op>, "success" | "meta"> & Pick<ApiError<D>, "error"> & { success: boolean; meta?: { timestamp: string } };

/** `op`'s success body from `res` (a Response or the promise of one). */
export async function ok<Op extends keyof operations>(res: Response | Promise<Response>, _op: Op): Promise<Ok<Op>> {
  return (await (await res).json()) as Ok<Op>;
}

/** `res`'s body, success or error (see `Answer`). */
export async function answer<Op extends keyof operations>(res: Response | Promise<Response>, _op: Op): Promise<Answer<Op>> {
  return (await (await res).json()) as Answer<Op>;
}

/** The error envelope from `res`; with `op`, that operation's error answers. */
export async function failed<D = Record<string, unknown>>(res: Response | Promise<Response>): Promise<ApiError<D>>;
export async function failed<Op extends keyof operations>(res: Response | Promise<Response>, op: Op): Promise<Failed<Op>>;
export async function failed(res: Response | Promise<Response>, _op?: keyof operations): Promise<unknown> {
  return (await (await res).json()) as unknown;
}

/** The SDK's client for `base` with `apiKey`; `handle` answers in-process (a service that does not listen). */
export function sdkClient(base: string, apiKey: string, handle?: (request: Request) => Response | Promise<Response>): VidliveClient {
  return createClient({ baseUrl: base, apiKey, ...(handle ? { fetch: async (request: Request) => handle(request) } : {}) });
}
