import { describe, expect, test } from "bun:test";
import { buildDownloadArgs, buildJobRuns, type EncodePlan } from "./build-ffmpeg-args.ts";

const plan: EncodePlan = {
  renditions: [
    { name: "360p", width: 640, height: 360, videoBitrateKbps: 400, audioBitrateKbps: 64 },
    { name: "720p", width: 1280, height: 720, videoBitrateKbps: 1200, audioBitrateKbps: 96 },
  ],
  hasVideo: true,
  hasAudio: true,
  segmentSeconds: 2,
  frameRate: 25,
  preset: "veryfast",
};
const after = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

const paths = { input: "/in/a.mp4", outDir: "/out" };
const hlsRuns = (p: EncodePlan, where = paths) => buildJobRuns(p, [], where)[0]!.runs;

describe("buildJobRuns: HLS", () => {
  test("one independent run per rung: scale, one variant, fixed GOP on segment boundaries", () => {
    const runs = hlsRuns(plan);
    expect(runs.map((r) => [r.label, r.readsInput, r.weight])).toEqual([
      ["360p", true, 640 * 360],
      ["720p", true, 1280 * 720],
    ]);
    const [a360, a720] = runs.map((r) => r.args) as [string[], string[]];
    expect(after(a360, "-i")).toBe("/in/a.mp4");
    expect(after(a360, "-filter_complex")).toBe("[0:v:0]scale=640:360,setsar=1[v0]");
    expect(after(a720, "-filter_complex")).toBe("[0:v:0]scale=1280:720,setsar=1[v0]");
    expect(after(a360, "-var_stream_map")).toBe("v:0,a:0,name:360p");
    expect(after(a720, "-var_stream_map")).toBe("v:0,a:0,name:720p");
    for (const args of [a360, a720]) {
      expect(after(args, "-g")).toBe("50");
      expect(after(args, "-keyint_min")).toBe("50");
      expect(after(args, "-sc_threshold")).toBe("0");
      expect(after(args, "-force_key_frames")).toBe("expr:gte(t,n_forced*2)");
      expect(after(args, "-hls_segment_filename")).toBe("/out/hls/%v/seg-%05d.ts");
      expect(args.at(-1)).toBe("/out/hls/%v/index.m3u8");
    }
    expect(after(a720, "-b:v:0")).toBe("1200k");
    expect(after(a360, "-b:a:0")).toBe("64k");
    expect(after(a360, "-master_pl_name")).toBe("master-360p.m3u8");
    // Apart from the rung's own values, the runs are the same command.
    const generic = (args: string[]) =>
      args.map((x) =>
        x
          .replace(/640|1280/, "W")
          .replace(/360|720/, "H")
          .replace(/^\d+k$/, "Nk"),
      );
    expect(generic(a360)).toEqual(generic(a720));
  });

  test("the same plan with host paths differs only in the paths", () => {
    const wasm = hlsRuns(plan).map((r) => r.args);
    const native = hlsRuns(plan, { input: "/data/up/a.mp4", outDir: "/data/vid_1" }).map((r) => r.args);
    const normalize = (a: string[]) => a.map((x) => x.replace("/data/up", "/in").replace("/data/vid_1", "/out"));
    expect(native.map(normalize)).toEqual(wasm);
  });

  test("video without audio maps no audio", () => {
    for (const { args } of hlsRuns({ ...plan, hasAudio: false })) {
      expect(after(args, "-var_stream_map")).toMatch(/^v:0,name:\d+p$/);
      expect(args).not.toContain("0:a:0");
      expect(args).not.toContain("-c:a");
    }
  });

  test("audio-only makes a single audio run and no video encoder", () => {
    const runs = hlsRuns(
      { ...plan, hasVideo: false, frameRate: null, renditions: [{ name: "audio", width: 0, height: 0, videoBitrateKbps: 0, audioBitrateKbps: 96 }] },
      { input: "/in/a.m4a", outDir: "/out" },
    );
    expect(runs).toHaveLength(1);
    const { args } = runs[0]!;
    expect(after(args, "-var_stream_map")).toBe("a:0,name:audio");
    expect(args).not.toContain("-filter_complex");
    expect(args).not.toContain("libx264");
    expect(after(args, "-b:a:0")).toBe("96k");
  });

  test("downloads are a second stage of one run, only when asked for", () => {
    expect(buildJobRuns(plan, [], paths).map((s) => s.kind)).toEqual(["hls"]);
    const stages = buildJobRuns(plan, [{ rendition: "720p", format: "mkv", file: "downloads/720p.mkv" }], paths);
    expect(stages.map((s) => [s.kind, s.runs.length])).toEqual([
      ["hls", 2],
      ["downloads", 1],
    ]);
    expect(stages[1]!.runs[0]!.readsInput).toBe(false);
  });
});

describe("buildDownloadArgs", () => {
  test("stream-copies each rendition playlist into its own file", () => {
    const args = buildDownloadArgs(
      [
        { rendition: "360p", format: "mkv", file: "downloads/360p.mkv" },
        { rendition: "720p", format: "mp4-encrypted", file: "downloads/720p.mp4", key: "a".repeat(32), kid: "b".repeat(32) },
      ],
      { outDir: "/out" },
    );
    const joined = args.join(" ");
    expect(joined).toContain("-i /out/hls/360p/index.m3u8 -i /out/hls/720p/index.m3u8");
    expect(joined).toContain("-map 0:v? -map 0:a? -c copy -f matroska /out/downloads/360p.mkv");
    expect(joined).toContain(`-map 1:v? -map 1:a? -c copy -encryption_scheme cenc-aes-ctr -encryption_key ${"a".repeat(32)} -encryption_kid ${"b".repeat(32)}`);
    expect(args.at(-1)).toBe("/out/downloads/720p.mp4");
  });

  test("refuses an encrypted download without a key", () => {
    expect(() => buildDownloadArgs([{ rendition: "360p", format: "mp4-encrypted", file: "x.mp4" }], { outDir: "/out" })).toThrow();
  });
});

describe("buildJobRuns: DRM jobs (plan.mp4Dir)", () => {
  const drmPlan: EncodePlan = { ...plan, mp4Dir: ".drm-scratch-x" };

  test("one run per rung with the HLS run's encoder arguments, into a plain MP4 under the scratch dir", () => {
    const [mp4] = buildJobRuns(drmPlan, [], paths);
    expect(mp4!.kind).toBe("mp4");
    const hls = hlsRuns(plan);
    mp4!.runs.forEach((run, i) => {
      expect([run.label, run.readsInput, run.weight]).toEqual([hls[i]!.label, true, hls[i]!.weight]);
      const encoder = hls[i]!.args.slice(0, hls[i]!.args.indexOf("-max_muxing_queue_size"));
      expect(run.args.slice(0, encoder.length)).toEqual(encoder);
      expect(run.args.slice(encoder.length)).toEqual(["-max_muxing_queue_size", "1024", "-f", "mp4", `/out/.drm-scratch-x/${run.label}.mp4`]);
    });
  });

  test("downloads stream-copy the scratch MP4s", () => {
    const stages = buildJobRuns(drmPlan, [{ rendition: "720p", format: "mkv", file: "downloads/720p.mkv" }], paths);
    expect(stages.map((s) => s.kind)).toEqual(["mp4", "downloads"]);
    expect(after(stages[1]!.runs[0]!.args, "-i")).toBe("/out/.drm-scratch-x/720p.mp4");
  });
});

describe("buildJobRuns: one-run layout (native)", () => {
  const posters = { plan: { thumbnailAt: 3, thumbnailWidth: 1280, thumbnailHeight: 720, interval: 1, tileWidth: 160, tileHeight: 90, columns: 10, rows: 3, tiles: 30 }, rendition: "360p" };

  test("one run decodes the source once and splits it to every rung's encoder and HLS muxer", () => {
    const [hls] = buildJobRuns(plan, [], paths, "one-run");
    expect(hls!.runs.map((r) => [r.label, r.readsInput, r.weight])).toEqual([["360p+720p", true, 640 * 360 + 1280 * 720]]);
    const args = hls!.runs[0]!.args;
    expect(args.filter((a) => a === "-i")).toHaveLength(1);
    expect(after(args, "-filter_complex")).toBe("[0:v:0]split=2[vmain0][vmain1];[vmain0]scale=640:360,setsar=1[v0];[vmain1]scale=1280:720,setsar=1[v1]");
    // Each rung is its own output: its maps, encoder and muxer options, in that order, as in its per-rendition run.
    const perRung = hlsRuns(plan).map((r) => r.args.slice(r.args.indexOf("-map")));
    const tail = args.slice(args.indexOf("-map"));
    expect(tail).toEqual([...perRung[0]!, ...perRung[1]!.map((a) => (a === "[v0]" ? "[v1]" : a))]);
  });

  test("x264Threads sets each encoder's frame threads; unset, x264 chooses", () => {
    const args = buildJobRuns({ ...plan, x264Threads: 6 }, [], paths, "one-run")[0]!.runs[0]!.args;
    expect(args.filter((a, i) => a === "-threads:v" && args[i + 1] === "6")).toHaveLength(2);
    expect(hlsRuns(plan).flatMap((r) => r.args)).not.toContain("-threads:v");
  });

  test("posters ride on the same run: split four ways, the images named before the rungs", () => {
    const [hls] = buildJobRuns({ ...plan, posters } as EncodePlan, [], paths, "one-run");
    const args = hls!.runs[0]!.args;
    expect(after(args, "-filter_complex")).toStartWith("[0:v:0]split=4[vmain0][vmain1][vthumb][vsprite];");
    expect(args.indexOf("/out/sprite.jpg")).toBeLessThan(args.indexOf("[v0]"));
    expect(args.indexOf("/out/thumbnail.jpg")).toBeGreaterThan(0);
  });

  test("a DRM job's one run writes one MP4 per rung; audio-only stays a single output", () => {
    const [mp4] = buildJobRuns({ ...plan, mp4Dir: ".drm-scratch-x" }, [], paths, "one-run");
    expect(mp4!.runs).toHaveLength(1);
    const args = mp4!.runs[0]!.args;
    expect(args.filter((a) => a.endsWith(".mp4") && a.startsWith("/out/"))).toEqual(["/out/.drm-scratch-x/360p.mp4", "/out/.drm-scratch-x/720p.mp4"]);
    const audio = { ...plan, hasVideo: false, frameRate: null, renditions: [{ name: "audio", width: 0, height: 0, videoBitrateKbps: 0, audioBitrateKbps: 96 }] };
    expect(buildJobRuns(audio, [], paths, "one-run")[0]!.runs[0]!.args).toEqual(hlsRuns(audio)[0]!.args);
  });
});
