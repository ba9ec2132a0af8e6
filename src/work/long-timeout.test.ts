import { expect, test } from "bun:test";
import { MAX_TIMER_MS, setLongTimeout } from "./long-timeout.ts";

test("a delay past setTimeout's 32-bit limit does not fire at once, and raises no TimeoutOverflowWarning", async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(w.name);
  process.on("warning", onWarning);
  let fired = 0;
  const cancel = setLongTimeout(() => fired++, MAX_TIMER_MS + 1);
  try {
    await Bun.sleep(30);
    expect(fired).toBe(0);
    expect(warnings).toEqual([]);
  } finally {
    cancel();
    process.off("warning", onWarning);
  }
});

test("a short delay fires once; a cancelled one never", async () => {
  let fired = 0;
  let cancelledFired = 0;
  setLongTimeout(() => fired++, 5);
  const cancel = setLongTimeout(() => cancelledFired++, 5);
  cancel();
  await Bun.sleep(40);
  expect([fired, cancelledFired]).toEqual([1, 0]);
});
