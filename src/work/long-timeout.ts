/**
 * The longest delay `setTimeout` honours: it takes a 32-bit signed integer,
 * and a longer delay (a TRANSCODE_TIMEOUT_MS of 30 days) fires after 1 ms,
 * with only a TimeoutOverflowWarning on stderr.
 */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/**
 * Runs `fn` once `ms` have passed, however long that is: a delay past
 * MAX_TIMER_MS waits in steps of at most that. Answers the cancel function.
 */
export function setLongTimeout(fn: () => void, ms: number): () => void {
  const at = Date.now() + ms;
  let timer: ReturnType<typeof setTimeout>;
  const arm = () => {
    const left = at - Date.now();
    timer = left > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(fn, Math.max(0, left));
  };
  arm();
  return () => clearTimeout(timer);
}
