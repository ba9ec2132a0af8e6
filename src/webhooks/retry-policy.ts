/**
 * When the next attempt happens after `attempts` scheduled attempts have
 * failed: the schedule's entry (seconds) ±10% jitter, or null once the
 * schedule is exhausted (the delivery is abandoned). DESIGN "Retries":
 * attempt at once, then ~1 min, 5 min, 25 min, 2 h, 10 h, 10 h.
 */
export function nextRetryDelayMs(schedule: readonly number[], attempts: number, random: () => number = Math.random): number | null {
  const seconds = schedule[attempts - 1];
  if (seconds === undefined) return null;
  const jitter = 0.9 + 0.2 * random();
  return Math.round(seconds * 1000 * jitter);
}
