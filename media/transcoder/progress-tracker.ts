/**
 * Turns ffmpeg's `-progress` key=value lines (or classic `time=` stats) into a
 * monotonic percentage. Both backends feed it the same lines.
 */
export interface ProgressTracker {
  /** Feed one log line of a phase; phases are weighted slices of 0..100. */
  line(line: string): void;
  /** Starts the next phase; earlier phases count as complete. */
  phase(index: number): void;
  /** Reports exactly 100 (once) when the job has succeeded. */
  finish(): void;
}

const TIME_US = /^out_time_(?:us|ms)=(\d+)/;
const CLOCK = /time=(-?\d+):(\d\d):(\d\d(?:\.\d+)?)/;

export function createProgressTracker(
  durationSeconds: number | null,
  weights: number[],
  onProgress: ((percent: number) => void) | undefined,
): ProgressTracker {
  const total = weights.reduce((a, b) => a + b, 0) || 1;
  let phaseIndex = 0;
  let reported = -1;

  const report = (percent: number) => {
    // One decimal is plenty for a progress bar and keeps callbacks rare.
    const p = Math.round(Math.min(100, Math.max(0, percent)) * 10) / 10;
    if (p <= reported) return;
    reported = p;
    try {
      onProgress?.(p);
    } catch {
      // a throwing progress callback must not fail the transcode
    }
  };

  const phaseStart = () => (weights.slice(0, phaseIndex).reduce((a, b) => a + b, 0) / total) * 100;
  report(0);

  return {
    line(line) {
      if (!durationSeconds || durationSeconds <= 0) return;
      let seconds: number | null = null;
      const us = TIME_US.exec(line);
      if (us) seconds = Number(us[1]) / 1e6;
      else {
        const clock = CLOCK.exec(line);
        if (clock) seconds = Number(clock[1]) * 3600 + Number(clock[2]) * 60 + Number(clock[3]);
      }
      if (seconds === null || !Number.isFinite(seconds)) return;
      const fraction = Math.min(1, Math.max(0, seconds / durationSeconds));
      const weight = ((weights[phaseIndex] ?? 0) / total) * 100;
      // Never claim 100 before the outputs are verified.
      report(Math.min(99.9, phaseStart() + fraction * weight));
    },
    phase(index) {
      phaseIndex = index;
      report(Math.min(99.9, phaseStart()));
    },
    finish() {
      report(100);
    },
  };
}
