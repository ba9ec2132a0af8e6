import { describe, expect, setDefaultTimeout, test } from "bun:test";
import type { ProbeResult, TranscodeResult } from "../../media/transcoder/index.ts";
import { defaultOrgSettings } from "../orgs/org-settings.ts";
import { progressThrottle } from "./transcode-encode.ts";
import { transcodeOutcome } from "./transcode-outcome.ts";
import { planOutputs } from "./transcode-plan.ts";

// The guard (test/suite-timeouts.test.ts) counts this file as starting a process: it imports media/transcoder.
setDefaultTimeout(120_000);

const probe = (height: number | null, hasVideo = true): ProbeResult => ({
  durationSeconds: 3,
  width: height ? Math.round((height * 16) / 9) : null,
  height,
  hasVideo,
  hasAudio: true,
  videoCodec: hasVideo ? "h264" : null,
  audioCodec: "aac",
  formatName: "mp4",
  frameRate: 30,
});

describe("transcode steps, each alone", () => {
  test("plan outputs: the top download is the highest rung the source fills, once; an audio source gets no video download", () => {
    const settings = { ...defaultOrgSettings(), downloads: { rungs: ["top", "720p", "1080p", "720p"], format: "mkv" as const } };
    const plan = planOutputs(probe(720), settings);
    expect(plan.downloads).toEqual([{ rung: "720p", format: "mkv" }]);
    expect(plan.ladder.length).toBeGreaterThan(0);
    expect(planOutputs(probe(null, false), settings).downloads).toEqual([]);
    // Without settings, the defaults' ladder and downloads.
    expect(planOutputs(probe(720), null).downloads).toEqual([{ rung: "720p", format: "mkv" }]);
  });

  test("plan outputs, static renditions: highest is the top rung produced, one MP4 per rung, each refusal stated", () => {
    const settings = { ...defaultOrgSettings(), staticRenditions: ["audio-only"] };
    const names = ["highest", "720p", "1080p", "144p", "audio-only"];
    const plan = planOutputs(probe(720), settings, { staticRenditions: names, drm: false }).statics;
    expect(plan.request).toEqual({ mp4: ["720p"], m4a: true });
    expect(plan.entries).toEqual([
      { name: "highest", make: { kind: "mp4", rendition: "720p" } },
      { name: "720p", make: { kind: "mp4", rendition: "720p" } },
      { name: "1080p", error: "SOURCE_TOO_SMALL" },
      { name: "144p", error: "NOT_IN_LADDER" },
      { name: "audio-only", make: { kind: "m4a" } },
    ]);
    // Absent on the video (a live recording): the organization's default.
    expect(planOutputs(probe(720), settings, { drm: false }).statics.request).toEqual({ mp4: [], m4a: true });
    // A DRM video: nothing clear, each stated.
    const drm = planOutputs(probe(720), settings, { staticRenditions: ["highest", "audio-only"], drm: true }).statics;
    expect(drm.request).toEqual({ mp4: [], m4a: false });
    expect(drm.entries.map((e) => ("error" in e ? e.error : null))).toEqual(["DRM_PROTECTED", "DRM_PROTECTED"]);
    // An audio source: the M4A only.
    expect(planOutputs(probe(null, false), settings, { staticRenditions: ["highest", "audio-only"], drm: false }).statics.entries).toEqual([
      { name: "highest", error: "NO_VIDEO" },
      { name: "audio-only", make: { kind: "m4a" } },
    ]);
  });

  test("encode's progress: at most one a second, always rising, 100 always told", () => {
    const sent: number[] = [];
    let now = 0;
    const report = progressThrottle(
      (p) => sent.push(p),
      () => now,
    );
    report(0.5);
    now = 1500;
    report(10.7);
    now = 1600;
    report(20);
    now = 3000;
    report(5);
    report(100);
    expect(sent).toEqual([10, 100]);
  });
});

describe("transcode steps, each alone", () => {
  test("outcome: URLs under the video, storage split as spec 2.6 asks for a clear and a DRM run", () => {
    const result: TranscodeResult = {
      masterPlaylist: "hls/master.m3u8",
      renditions: [{ quality: "720p", width: 1280, height: 720, playlist: "hls/720p/index.m3u8", download: { file: "downloads/720p.mkv", format: "mkv", password: null, sizeBytes: 50 } }],
      durationSeconds: 2.6,
      hlsBytes: 100,
      drmBytes: 0,
      packagingMs: 0,
      downloadBytes: 50,
      probe: probe(720),
      posters: null,
    };
    const url = (f: string) => `https://media/vid_1/${f}`;
    const clear = transcodeOutcome({ url, watchUrl: "https://w/1", result, sourceBytes: 10, transcriptBytes: 5, drm: null });
    expect(clear).toMatchObject({ url: url("hls/master.m3u8"), durationSeconds: 3, sizeBytes: 10, watchUrl: "https://w/1" });
    expect(clear.renditions[0]).toEqual({
      quality: "720p",
      url: url("hls/720p/index.m3u8"),
      width: 1280,
      height: 720,
      download_url: url("downloads/720p.mkv"),
      download_size_bytes: "50",
      download_password: null,
    });
    expect(clear.storage).toEqual({ total_bytes: "165", hls_bytes: "100", download_bytes: "50", original_bytes: "10", transcript_bytes: "5" });
    expect(clear.transcript).toEqual({ url: url("transcript.vtt"), summaryUrl: url("summary.txt") });
    const drm = transcodeOutcome({ url, watchUrl: "w", result: { ...result, drmBytes: 300 }, sourceBytes: 10, transcriptBytes: null, drm: { contentId: "k", licenseUrl: "l" } });
    expect(drm.storage).toEqual({ total_bytes: "360", drm_bytes: "300", download_bytes: "50", original_bytes: "10" });
    expect(drm.drm).toEqual({ contentId: "k", licenseUrl: "l" });
    expect(drm.transcript).toBeUndefined();
  });
});
