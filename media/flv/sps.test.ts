import { afterAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { closeMediaTools, ffprobeJson, runFfmpeg } from "../test-support/media-tools.ts";
import { parseAvcDecoderConfig, parseFlvVideoTag } from "./avc.ts";
import { readFlvTags } from "./flv-reader.ts";
import { parseSps, SpsParseError } from "./sps.ts";

setDefaultTimeout(120_000);

afterAll(closeMediaTools);

const hex = (s: string) => new Uint8Array(Buffer.from(s, "hex"));

describe("parseSps", () => {
  test("x264 1080p High: coded 1920x1088, cropped to 1920x1080 (embedded SPS)", () => {
    // Contains an emulation-prevention byte (00 00 03) before the VUI.
    const sps = parseSps(hex("67640028acd940780227e5c044000003000400000300c83c60c658"));
    expect(sps).toMatchObject({
      width: 1920,
      height: 1080,
      codedWidth: 1920,
      codedHeight: 1088,
      profileIdc: 100,
      profile: "High",
      level: "4.0",
      crop: { left: 0, right: 0, top: 0, bottom: 4 },
    });
  });

  test("not an SPS / truncated → SpsParseError naming the field", () => {
    expect(() => parseSps(hex("68ee3c80"))).toThrow(/nal_unit_type/);
    expect(() => parseSps(hex("67640028ac"))).toThrow(SpsParseError);
    expect(() => parseSps(hex("67640028ac"))).toThrow(/SPS \w+/);
  });

  // Variants ffmpeg makes in a few ms each (~1 s with ffmpeg.wasm); ffprobe is the referee.
  const variants: Array<{ name: string; size: string; pixFmt: string; args: string[]; profile: string }> = [
    { name: "1080p High (cropped)", size: "1920x1080", pixFmt: "yuv420p", args: ["-profile:v", "high"], profile: "High" },
    { name: "odd 322x242 Baseline", size: "322x242", pixFmt: "yuv420p", args: ["-profile:v", "baseline"], profile: "Baseline" },
    { name: "4:4:4 with scaling matrices", size: "1280x720", pixFmt: "yuv444p", args: ["-x264-params", "cqm=jvt"], profile: "High 4:4:4 Predictive" },
    { name: "4:2:2 10-bit with scaling matrices", size: "640x360", pixFmt: "yuv422p10le", args: ["-x264-params", "cqm=jvt"], profile: "High 4:2:2" },
    { name: "interlaced (frame_mbs_only=0)", size: "720x576", pixFmt: "yuv420p", args: ["-flags", "+ildct+ilme", "-x264-params", "interlaced=1"], profile: "High" },
  ];
  const dir = mkdtempSync(join(tmpdir(), "sps-"));
  for (const v of variants) {
    test(`ffmpeg-made ${v.name} matches ffprobe`, async () => {
      const path = join(dir, `${v.size}-${v.pixFmt}.flv`);
      const made = await runFfmpeg(
        ["-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i", `testsrc2=size=${v.size}:rate=25:duration=0.04`, "-pix_fmt", v.pixFmt, "-c:v", "libx264", ...v.args, "-f", "flv", path],
        { outDir: dir },
      );
      expect(made).toMatchObject({ exitCode: 0, stderr: "" });
      const bytes = new Uint8Array(await Bun.file(path).arrayBuffer());
      const seq = [...readFlvTags(bytes)].find((t) => t.type === "video")!;
      const config = parseAvcDecoderConfig(parseFlvVideoTag(seq.payload).data);
      const sps = parseSps(config.sps[0]!);
      const probe = (await ffprobeJson(path, ["-show_entries", "stream=width,height"])).streams[0];
      expect(`${sps.width}x${sps.height}`).toBe(`${probe.width}x${probe.height}`);
      expect(`${sps.width}x${sps.height}`).toBe(v.size);
      expect(sps.profile).toBe(v.profile);
    });
  }
});
