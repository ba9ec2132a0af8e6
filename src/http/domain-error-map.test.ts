import { expect, test } from "bun:test";
import type { DomainError } from "../errors.ts";
import { InvalidInput, NotFound } from "../errors.ts";
import { InvalidScheduledAt, NoSlotsAvailable } from "../live/errors.ts";
import { ApiKeyExists, DrmNotAvailable, OrgNotFound } from "../orgs/errors.ts";
import {
  InvalidSourceUrl,
  TranscodeNotConfigured,
  TranscodeQueueFailed,
  TranscodeQueueFull,
  UploadEmpty,
  UploadNotPending,
  UploadNotRegistrable,
  UploadTooLarge,
  UploadUrlRefused,
  VideoNotRetryable,
} from "../videos/errors.ts";
import { EndpointLimitReached, EndpointUrlRefused } from "../webhooks/errors.ts";
import { domainErrorResponse } from "./domain-error-map.ts";

interface Expected {
  status: number;
  code: string;
  message: string;
  details?: unknown;
  retryAfter?: string;
}

const cases: Array<[DomainError, Expected]> = [
  [new NotFound(), { status: 404, code: "NOT_FOUND", message: "Resource not found." }],
  [new OrgNotFound("org_1"), { status: 404, code: "NOT_FOUND", message: "No organization org_1." }],
  [new UploadNotPending(), { status: 404, code: "NOT_FOUND", message: "No pending upload at this URL (it may have been used already)." }],
  [new UploadUrlRefused("signature"), { status: 403, code: "PERMISSION_DENIED", message: "The upload URL's signature is invalid.", details: ["upload.signature"] }],
  [new UploadUrlRefused("expired"), { status: 403, code: "PERMISSION_DENIED", message: "The upload URL has expired.", details: ["upload.signature"] }],
  [new ApiKeyExists(), { status: 409, code: "API_KEY_EXISTS", message: "The organization already has an active API key. Revoke it first." }],
  [new TranscodeNotConfigured(), { status: 409, code: "TRANSCODE_NOT_CONFIGURED", message: "The organization has no transcoding settings." }],
  [new DrmNotAvailable(), { status: 409, code: "DRM_NOT_AVAILABLE", message: "DRM is not available on the organization's plan." }],
  [new VideoNotRetryable("COMPLETED"), { status: 409, code: "VIDEO_NOT_RETRYABLE", message: "Only a video in ERROR can be retried; this one is COMPLETED.", details: { status: "COMPLETED" } }],
  [new InvalidInput({ a: "is required" }), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { a: "is required" } }],
  [new InvalidSourceUrl(), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { source_url: "must be an http or https URL" } }],
  [new UploadNotRegistrable("unknown"), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { source_url: "no upload of this organization at this URL" } }],
  [new UploadNotRegistrable("unfinished"), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { source_url: "the upload has not finished" } }],
  [new UploadTooLarge("size_bytes", 10), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { size_bytes: "must be at most 10" } }],
  [new UploadTooLarge("body", 10), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { body: "must be at most 10 bytes" } }],
  [new UploadEmpty(), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { body: "must not be empty" } }],
  [new InvalidScheduledAt("must be in the future"), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { scheduled_at: "must be in the future" } }],
  [
    new EndpointLimitReached(20),
    {
      status: 422,
      code: "VALIDATION_ERROR",
      message: "The request failed validation.",
      details: { endpoints: "an organization may have at most 20 webhook endpoints; delete one before registering another" },
    },
  ],
  [new EndpointUrlRefused(), { status: 422, code: "VALIDATION_ERROR", message: "The request failed validation.", details: { url: "must not point to a private, loopback or link-local address" } }],
  [new TranscodeQueueFailed(), { status: 502, code: "TRANSCODE_QUEUE_FAILED", message: "The transcoding pipeline refused or timed out. Safe to retry.", retryAfter: "10" }],
  [new TranscodeQueueFull(), { status: 502, code: "TRANSCODE_QUEUE_FAILED", message: "The transcoding queue is full. Safe to retry.", retryAfter: "10" }],
  [new NoSlotsAvailable("pool"), { status: 503, code: "NO_SLOTS_AVAILABLE", message: "Live stream capacity is exhausted. Retry shortly.", retryAfter: "30" }],
];

for (const [err, want] of cases) {
  test(`${err.name} → ${want.status} ${want.code}`, async () => {
    const res = domainErrorResponse(err);
    expect(res.status).toBe(want.status);
    expect(res.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(res.headers.get("retry-after")).toBe(want.retryAfter ?? null);
    const body = (await res.json()) as Record<string, any>;
    expect(Object.keys(body).sort()).toEqual(["error", "message", "meta", "success"]);
    expect(body.success).toBe(false);
    expect(body.message).toBe(want.message);
    expect(body.error).toEqual(want.details === undefined ? { code: want.code } : { code: want.code, details: want.details });
    expect(typeof body.meta.timestamp).toBe("string");
  });
}

test("a domain error's details are its own copy: changing the input afterwards changes nothing", () => {
  const fields = { a: "is required" };
  const err = new InvalidInput(fields);
  fields.a = "changed";
  expect(err.fields).toEqual({ a: "is required" });
});

test("subclasses stay catchable by their family", () => {
  expect(new TranscodeQueueFull()).toBeInstanceOf(TranscodeQueueFailed);
  expect(new OrgNotFound("x")).toBeInstanceOf(NotFound);
  expect(new EndpointLimitReached(1)).toBeInstanceOf(InvalidInput);
  expect(new UploadNotPending().name).toBe("UploadNotPending");
});
