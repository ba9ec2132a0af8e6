import { describe, expect, test } from "bun:test";
import { abortReason, createJobSignal } from "./abort-reason.ts";

describe("createJobSignal", () => {
  test("the deadline aborts with TIMEOUT", async () => {
    const js = createJobSignal({ timeoutMs: 10 });
    await Bun.sleep(30);
    expect(js.signal.aborted).toBe(true);
    expect(abortReason(js.signal).code).toBe("TIMEOUT");
    js.dispose();
  });

  test("the caller's signal aborts with CANCELLED, also when already aborted", () => {
    const c = new AbortController();
    const js = createJobSignal({ signal: c.signal, timeoutMs: 10_000 });
    c.abort();
    expect(abortReason(js.signal).code).toBe("CANCELLED");
    js.dispose();
    expect(abortReason(createJobSignal({ signal: AbortSignal.abort() }).signal).code).toBe("CANCELLED");
  });

  test("dispose stops the timer", async () => {
    const js = createJobSignal({ timeoutMs: 10 });
    js.dispose();
    await Bun.sleep(30);
    expect(js.signal.aborted).toBe(false);
  });

  test("a deadline of 30 days does not fire at once (a delay past 2^31-1 ms would fire after 1 ms)", async () => {
    const js = createJobSignal({ timeoutMs: 30 * 24 * 60 * 60 * 1000 });
    await Bun.sleep(30);
    expect(js.signal.aborted).toBe(false);
    js.dispose();
  });
});
