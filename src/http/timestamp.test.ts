import { expect, test } from "bun:test";
import fc from "fast-check";
import { parseIsoTimestamp, parseScheduledAt } from "./timestamp.ts";

test("every real instant, written with Z or an offset, parses to that instant", () => {
  fc.assert(
    fc.property(fc.date({ min: new Date("1970-01-01T00:00:00Z"), max: new Date("9998-12-31T23:59:59Z"), noInvalidDate: true }), fc.integer({ min: -14 * 60, max: 14 * 60 }), (d, offset) => {
      expect(parseIsoTimestamp(d.toISOString())).toEqual({ ok: true, ms: d.getTime() });
      const local = new Date(d.getTime() + offset * 60_000).toISOString().slice(0, 23);
      const sign = offset < 0 ? "-" : "+";
      const abs = Math.abs(offset);
      const text = `${local}${sign}${String(Math.floor(abs / 60)).padStart(2, "0")}:${String(abs % 60).padStart(2, "0")}`;
      expect(parseIsoTimestamp(text)).toEqual({ ok: true, ms: d.getTime() });
    }),
    { numRuns: 500 },
  );
});

test("dates that do not exist, missing offsets and loose formats are refused", () => {
  for (const s of [
    "2099-02-30T10:00:00Z",
    "2100-02-29T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-00-10T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "2026-01-01T24:00:00Z",
    "2026-01-01T10:60:00Z",
    "2026-01-01T10:00:60Z",
    "2026-01-01T10:00:00",
    "2026-01-01",
    "2026-01-01 10:00:00Z",
    "2026-01-01T10:00Z",
    "2026-01-01t10:00:00z",
    "+002026-01-01T10:00:00Z",
    "2026-01-01T10:00:00+2400",
    "",
  ]) {
    expect(parseIsoTimestamp(s).ok).toBe(false);
  }
  expect(parseIsoTimestamp("2096-02-29T00:00:00.123456789Z")).toEqual({ ok: true, ms: Date.UTC(2096, 1, 29, 0, 0, 0, 123) });
});

test("scheduled_at: in the future and at most one calendar year ahead", () => {
  const now = Date.UTC(2030, 5, 15, 12, 0, 0);
  expect(parseScheduledAt("2030-06-15T12:00:00Z", now)).toMatchObject({ ok: false, error: "must be in the future" });
  expect(parseScheduledAt("2030-06-15T12:00:01Z", now)).toMatchObject({ ok: true });
  expect(parseScheduledAt("2031-06-15T12:00:00Z", now)).toMatchObject({ ok: true });
  expect(parseScheduledAt("2031-06-15T12:00:00.001Z", now)).toMatchObject({ ok: false, error: "must be at most one year ahead" });
});
