import { expect, test } from "bun:test";
import { DEFAULT_RETRY_SCHEDULE } from "../config.ts";
import { nextRetryDelayMs } from "./retry-policy.ts";

test("six retries after the first attempt, then abandonment", () => {
  const mid = () => 0.5;
  expect([1, 2, 3, 4, 5, 6].map((n) => nextRetryDelayMs(DEFAULT_RETRY_SCHEDULE, n, mid))).toEqual([60_000, 300_000, 1_500_000, 7_200_000, 36_000_000, 36_000_000]);
  expect(nextRetryDelayMs(DEFAULT_RETRY_SCHEDULE, 7, mid)).toBeNull();
});

test("jitter stays within ±10%", () => {
  expect(nextRetryDelayMs([60], 1, () => 0)).toBe(54_000);
  expect(nextRetryDelayMs([60], 1, () => 0.999999)).toBe(66_000);
  for (let i = 0; i < 100; i++) {
    const d = nextRetryDelayMs([300], 1)!;
    expect(d).toBeGreaterThanOrEqual(270_000);
    expect(d).toBeLessThanOrEqual(330_000);
  }
});
