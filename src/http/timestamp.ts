/**
 * Strict ISO 8601 timestamps as clients send them (the RFC 3339 profile):
 * `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`. The date must exist on the
 * calendar (`2099-02-30` is refused, where `Date.parse` would roll it over to
 * March 2), the offset is required (a time without one names no instant), and
 * leap seconds (`:60`) are refused.
 */
const ISO = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?(Z|([+-])(\d{2}):(\d{2}))$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return [4, 6, 9, 11].includes(month) ? 30 : 31;
}

/** Milliseconds since the epoch, or a message saying what is wrong. */
export function parseIsoTimestamp(raw: unknown): { ok: true; ms: number } | { ok: false; error: string } {
  const format = "must be an ISO 8601 timestamp with a time zone, e.g. 2030-01-31T18:00:00Z or 2030-01-31T19:00:00+01:00";
  if (typeof raw !== "string") return { ok: false, error: format };
  const m = ISO.exec(raw);
  if (!m) return { ok: false, error: format };
  const [year, month, day, hour, minute, second] = [m[1], m[2], m[3], m[4], m[5], m[6]].map(Number) as [number, number, number, number, number, number];
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return { ok: false, error: "must be a real calendar date" };
  if (hour > 23 || minute > 59 || second > 59) return { ok: false, error: "must be a real time of day" };
  let offsetMinutes = 0;
  if (m[8] !== "Z") {
    const oh = Number(m[10]);
    const om = Number(m[11]);
    if (oh > 23 || om > 59) return { ok: false, error: format };
    offsetMinutes = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const millis = m[7] ? Math.floor(Number(`0${m[7]}`) * 1000) : 0;
  const d = new Date(0);
  d.setUTCFullYear(year, month - 1, day); // not Date.UTC: it maps years 0-99 to 1900-1999
  d.setUTCHours(hour, minute, second, millis);
  const ms = d.getTime() - offsetMinutes * 60_000;
  return { ok: true, ms };
}

/** `scheduled_at`: strict (above), in the future and at most one calendar year ahead. */
export function parseScheduledAt(raw: unknown, now = Date.now()): { ok: true; ms: number } | { ok: false; error: string } {
  const r = parseIsoTimestamp(raw);
  if (!r.ok) return r;
  if (r.ms <= now) return { ok: false, error: "must be in the future" };
  const limit = new Date(now);
  limit.setUTCFullYear(limit.getUTCFullYear() + 1);
  if (r.ms > limit.getTime()) return { ok: false, error: "must be at most one year ahead" };
  return r;
}
