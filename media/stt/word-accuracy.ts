/** Lower case, letters, digits and apostrophes only: what WER compares. */
export function normalizeWords(text: string): string[] {
  return text
    .toLowerCase()
    .replace(/[^a-z0-9'\s]/g, " ")
    .split(/\s+/)
    .filter((w) => w !== "");
}

/** Word-level Levenshtein distance (substitutions + deletions + insertions). */
export function wordEditDistance(ref: string[], hyp: string[]): number {
  let prev = Array.from({ length: hyp.length + 1 }, (_, j) => j);
  for (let i = 1; i <= ref.length; i++) {
    const cur = [i];
    for (let j = 1; j <= hyp.length; j++) {
      const sub = (prev[j - 1] ?? 0) + (ref[i - 1] === hyp[j - 1] ? 0 : 1);
      cur.push(Math.min(sub, (prev[j] ?? 0) + 1, (cur[j - 1] ?? 0) + 1));
    }
    prev = cur;
  }
  return prev[hyp.length] ?? 0;
}

/** 1 − WER, floored at 0 (a hypothesis with many insertions can make WER exceed 1). */
export function wordAccuracy(reference: string, hypothesis: string): number {
  const ref = normalizeWords(reference);
  if (ref.length === 0) return hypothesis.trim() === "" ? 1 : 0;
  return Math.max(0, 1 - wordEditDistance(ref, normalizeWords(hypothesis)) / ref.length);
}
