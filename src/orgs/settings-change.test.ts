import { expect, test } from "bun:test";
import { defaultOrgSettings } from "./org-settings.ts";
import { applySettingsChange, SettingsChangeRefused } from "./settings-change.ts";

// The rules `cli org set` and the settings screen's Organization form share (issue 25: they live with organizations).

test("a ladder is sorted by height, limits and permissions set, and the given settings are left as they were", () => {
  const before = defaultOrgSettings();
  const copy = structuredClone(before);
  const next = applySettingsChange(before, { ladder: "720p, 360p", limits: ["videos=7"], permissions: "none", playbackPolicy: "signed", downloads: "none" });
  expect(next.transcoding?.ladder.map((r) => r.name)).toEqual(["360p", "720p"]);
  expect(next.limits.videosCreatePerMinute).toBe(7);
  expect(next.permissions).toEqual([]);
  expect(next.playback.policy).toBe("signed");
  expect(next.downloads.rungs).toEqual([]);
  expect(before).toEqual(copy);
});

test("each refusal names the option, as the CLI prints it and the screen shows it", () => {
  const s = defaultOrgSettings();
  const refusal = (change: Parameters<typeof applySettingsChange>[1]) => {
    try {
      applySettingsChange(s, change);
    } catch (err) {
      expect(err).toBeInstanceOf(SettingsChangeRefused);
      return (err as Error).message;
    }
    throw new Error("not refused");
  };
  expect(refusal({ ladder: "999p" })).toStartWith('--ladder: unknown rung "999p"');
  expect(refusal({ downloadFormat: "avi" })).toBe('--download-format takes mkv or mp4-encrypted, got "avi"');
  expect(refusal({ drm: "maybe" })).toBe('--drm takes on or off, got "maybe"');
  expect(refusal({ limits: ["videos=0"] })).toBe('--limit videos must be a positive integer, got "0"');
  expect(refusal({ permissions: "videos.fly" })).toStartWith('--permissions: unknown permission "videos.fly"');
  expect(refusal({ playbackPolicy: "secret" })).toBe('--playback-policy takes public or signed, got "secret"');
});

test("transcoding off makes the organization source-only; on again restores a default ladder", () => {
  const off = applySettingsChange(defaultOrgSettings(), { transcoding: "off" });
  expect(off.transcoding).toBeNull();
  expect(applySettingsChange(off, { transcoding: "on" }).transcoding?.ladder.map((r) => r.name)).toEqual(["360p", "720p", "1080p"]);
});

test("static renditions (issue 27 item 4): highest, audio-only and ladder rungs, once each; none clears; a ladder dropping a named rung is refused with it", () => {
  const s = defaultOrgSettings();
  expect(applySettingsChange(s, { staticRenditions: "highest, audio-only,720p,highest" }).staticRenditions).toEqual(["highest", "audio-only", "720p"]);
  expect(applySettingsChange({ ...s, staticRenditions: ["highest"] }, { staticRenditions: "none" }).staticRenditions).toEqual([]);
  expect(() => applySettingsChange(s, { staticRenditions: "2160p" })).toThrow('--static-renditions: "2160p" is not one of highest, audio-only, 360p, 720p, 1080p');
  const named = applySettingsChange(s, { staticRenditions: "1080p" });
  expect(() => applySettingsChange(named, { ladder: "360p,720p" })).toThrow("--static-renditions");
  expect(applySettingsChange(named, { ladder: "360p,720p", staticRenditions: "highest" }).staticRenditions).toEqual(["highest"]);
});
