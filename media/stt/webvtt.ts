import type { Word } from "./types.ts";

/** Caption conventions (BBC/Netflix style guides): ≤ 42 characters a line, ≤ 2 lines a cue. */
export const MAX_LINE_CHARS = 42;
export const MAX_LINES = 2;
/** A cue closes after this long, or at a pause longer than MAX_GAP_SECONDS. */
export const MAX_CUE_SECONDS = 5;
export const MAX_GAP_SECONDS = 1;
/** Short cues stay up at least this long when the next cue allows it. */
export const MIN_CUE_SECONDS = 1;

export interface Cue {
  start: number;
  end: number;
  /** One entry per line. */
  lines: string[];
}

/** `hh:mm:ss.mmm`, the only form every player accepts. */
export function formatVttTime(seconds: number): string {
  const ms = Math.max(0, Math.round(seconds * 1000));
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor(ms / 60_000) % 60;
  const s = Math.floor(ms / 1000) % 60;
  const pad = (n: number, w = 2) => String(n).padStart(w, "0");
  return `${pad(h)}:${pad(m)}:${pad(s)}.${pad(ms % 1000, 3)}`;
}

export function parseVttTime(text: string): number {
  const m = /^(?:(\d+):)?(\d{2}):(\d{2})\.(\d{3})$/.exec(text.trim());
  if (!m) throw new Error(`not a WebVTT timestamp: ${text}`);
  return Number(m[1] ?? 0) * 3600 + Number(m[2]) * 60 + Number(m[3]) + Number(m[4]) / 1000;
}

/** Cue text may not hold `&`, `<` or `-->`: escape the characters the format reserves. */
function escapeCueText(text: string): string {
  return text.replaceAll("&", "&amp;").replaceAll("<", "&lt;").replaceAll(">", "&gt;");
}

/** A word longer than a line (a URL read out) is cut into line-sized pieces. */
function splitLong(text: string): string[] {
  const parts: string[] = [];
  for (let i = 0; i < text.length; i += MAX_LINE_CHARS) parts.push(text.slice(i, i + MAX_LINE_CHARS));
  return parts;
}

/**
 * Groups words into cues: a cue closes at a pause, after MAX_CUE_SECONDS, or
 * when its text would not fit in MAX_LINES lines of MAX_LINE_CHARS (lines are
 * filled word by word, so no line is ever longer). Times are clamped to
 * [0, durationSeconds]; cues never overlap.
 */
export function buildCues(words: Word[], durationSeconds: number): Cue[] {
  const cues: Cue[] = [];
  let cur: Cue | null = null;
  const sorted = words.filter((w) => w.text.trim() !== "" && w.start < durationSeconds).sort((a, b) => a.start - b.start);
  for (const w of sorted) {
    const start = Math.max(0, w.start);
    const end = Math.min(durationSeconds, Math.max(start, w.end));
    for (const piece of splitLong(escapeCueText(w.text.trim()))) {
      if (cur && (start - cur.end > MAX_GAP_SECONDS || end - cur.start > MAX_CUE_SECONDS || !fits(cur.lines, piece))) cur = null;
      if (!cur) {
        cur = { start, end, lines: [piece] };
        cues.push(cur);
        continue;
      }
      const last = cur.lines.length - 1;
      const line = cur.lines[last] ?? "";
      if (line.length + 1 + piece.length <= MAX_LINE_CHARS) cur.lines[last] = `${line} ${piece}`;
      else cur.lines.push(piece);
      cur.end = Math.max(cur.end, end);
    }
  }
  // Give short cues time to be read, without overlapping the next one or passing the end.
  for (let i = 0; i < cues.length; i++) {
    const cue = cues[i] as Cue;
    const limit = Math.min(durationSeconds, cues[i + 1]?.start ?? durationSeconds);
    if (cue.end - cue.start < MIN_CUE_SECONDS) cue.end = Math.min(limit, cue.start + MIN_CUE_SECONDS);
    cue.end = Math.min(cue.end, limit);
  }
  return cues.filter((c) => c.end > c.start);
}

function fits(lines: string[], piece: string): boolean {
  const last = lines[lines.length - 1] ?? "";
  return last.length + 1 + piece.length <= MAX_LINE_CHARS || lines.length < MAX_LINES;
}

export function renderCue(cue: Cue): string {
  return `${formatVttTime(cue.start)} --> ${formatVttTime(cue.end)}\n${cue.lines.join("\n")}`;
}

/** A WebVTT file (`text/vtt`) from word timings; an empty transcript gives a valid file with no cues. */
export function buildWebVtt(words: Word[], opts: { durationSeconds: number }): string {
  const cues = buildCues(words, opts.durationSeconds);
  return `WEBVTT\n\n${cues.map(renderCue).join("\n\n")}${cues.length ? "\n" : ""}`;
}

export interface ParsedVtt {
  /** Header lines after `WEBVTT` (e.g. X-TIMESTAMP-MAP). */
  header: string[];
  cues: Cue[];
}

/** Reads back what buildWebVtt/segmentWebVtt write (cue settings and identifiers tolerated). */
export function parseWebVtt(vtt: string): ParsedVtt {
  const blocks = vtt.replace(/\r\n?/g, "\n").split(/\n{2,}/);
  const first = (blocks.shift() ?? "").split("\n");
  if (!/^WEBVTT(\s|$)/.test(first[0] ?? "")) throw new Error("not a WebVTT file: it must start with WEBVTT");
  const cues: Cue[] = [];
  for (const block of blocks) {
    const lines = block.split("\n").filter((l) => l !== "");
    const at = lines.findIndex((l) => l.includes("-->"));
    if (at < 0) continue; // NOTE / STYLE blocks
    const [from = "", rest = ""] = (lines[at] as string).split("-->");
    const to = rest.trim().split(/\s+/)[0] ?? "";
    cues.push({ start: parseVttTime(from), end: parseVttTime(to), lines: lines.slice(at + 1) });
  }
  return { header: first.slice(1), cues };
}
