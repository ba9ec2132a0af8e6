/**
 * Turns ffmpeg's `-progress` key=value lines (or classic `time=` stats) into a
 * monotonic percentage. Both backends feed it the same lines.
 *
 * A job is a sequence of weighted phases (HLS 90, downloads 10); a phase may
 * consist of parts that run at the same time (one run per rendition), each
 * weighted within its phase, e.g. by output pixels.
 */
export interface ProgressTracker {
  /** Feed one log line of part `part` (default 0) of the current phase. */
  line(line: string, part?: number): void;
  /** Starts phase `index` made of parts with these weights (default one part) and media lengths (default the source's duration: a chunk is shorter); earlier phases count as complete. */
  phase(index: number, partWeights?: number[], partSeconds?: Array<number | undefined>): void;
  /** Reports exactly 100 (once) when the job has succeeded. */
  finish(): void;
}

const TIME_US = /^out_time_(?:us|ms)=(\d+)/;
const CLOCK = /time=(-?\d+):(\d\d):(\d\d(?:\.\d+)?)/;

export function createProgressTracker(durationSeconds: number | null, weights: number[], onProgress: ((percent: number) => void) | undefined): ProgressTracker {
  const total = weights.reduce((a, b) => a + b, 0) || 1;
  let phaseIndex = 0;
  let parts = [1];
  let partDone = [0];
  let partLength: Array<number | undefined> = [];
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
    line(line, part = 0) {
      if (!durationSeconds || durationSeconds <= 0) return;
      if (!(part >= 0 && part < parts.length)) return;
      let seconds: number | null = null;
      const us = TIME_US.exec(line);
      if (us) seconds = Number(us[1]) / 1e6;
      else {
        const clock = CLOCK.exec(line);
        if (clock) seconds = Number(clock[1]) * 3600 + Number(clock[2]) * 60 + Number(clock[3]);
      }
      if (seconds === null || !Number.isFinite(seconds)) return;
      const length = partLength[part] ?? durationSeconds;
      partDone[part] = Math.max(partDone[part]!, Math.min(1, Math.max(0, seconds / length)));
      const partTotal = parts.reduce((a, b) => a + b, 0) || 1;
      const fraction = parts.reduce((sum, w, i) => sum + w * partDone[i]!, 0) / partTotal;
      const weight = ((weights[phaseIndex] ?? 0) / total) * 100;
      // Never claim 100 before the outputs are verified.
      report(Math.min(99.9, phaseStart() + fraction * weight));
    },
    phase(index, partWeights = [1], partSeconds = []) {
      phaseIndex = index;
      partLength = partSeconds.map((s) => (s && s > 0 ? s : undefined));
      parts = partWeights.length > 0 ? partWeights.map((w) => Math.max(0, w)) : [1];
      partDone = parts.map(() => 0);
      report(Math.min(99.9, phaseStart()));
    },
    finish() {
      report(100);
    },
  };
}
