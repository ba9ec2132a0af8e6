import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CHROMIUM_MISSING, hasChromium, type PlayerHarness, SHAKA_CATEGORY_DRM, startPlayer } from "./support/browser.ts";
import { FIXTURES } from "./support/file-server.ts";

if (!hasChromium) console.warn(CHROMIUM_MISSING);

const PACKAGER = join(import.meta.dir, "..", "node_modules", "shaka-packager", "bin", "packager-linux-x64");
const KID = "00112233445566778899aabbccddeeff";
const KEY = "ffeeddccbbaa99887766554433221100";

/** Raw-key CENC DASH with the common-system PSSH, made by Shaka Packager directly (not by the service): proves the harness alone. */
function packageFixture(dir: string) {
  const src = join(FIXTURES, "av-720p-3s.mp4");
  const r = Bun.spawnSync(
    [
      PACKAGER,
      `in=${src},stream=video,init_segment=v/init.mp4,segment_template=v/$Number$.m4s`,
      `in=${src},stream=audio,init_segment=a/init.mp4,segment_template=a/$Number$.m4s`,
      "--enable_raw_key_encryption",
      "--keys",
      `label=:key_id=${KID}:key=${KEY}`,
      "--protection_scheme",
      "cenc",
      "--protection_systems",
      "CommonSystem",
      "--clear_lead",
      "0",
      "--segment_duration",
      "1",
      "--generate_static_live_mpd",
      "--mpd_output",
      "manifest.mpd",
    ],
    { cwd: dir, stdout: "pipe", stderr: "pipe" },
  );
  if (r.exitCode !== 0) throw new Error(`packager exited ${r.exitCode}: ${r.stderr.toString()}`);
}

describe.skipIf(!hasChromium)("shaka-player in Chromium", () => {
  let player: PlayerHarness;
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "drm-dash-"));
    packageFixture(dir);
    player = await startPlayer({ files: dir });
  });
  afterAll(async () => {
    await player?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  test("harness: packager-made CENC DASH plays past 2 s with the ClearKey keys given directly", async () => {
    const r = await player.playDash({ manifestUrl: player.fileUrl("manifest.mpd"), clearKeys: { [KID]: KEY } });
    expect(r.currentTime).toBeGreaterThan(2);
    expect(r.keySystem).toBe("org.w3.clearkey");
  });

  test("harness: with a wrong key the samples do not decode (the media is really encrypted)", async () => {
    const r = await player.tryDash({ manifestUrl: player.fileUrl("manifest.mpd"), clearKeys: { [KID]: "0".repeat(32) } });
    expect(r.ok).toBe(false);
  });

  test("harness: the same DASH without a key fails with a DRM error", async () => {
    const r = await player.tryDash({ manifestUrl: player.fileUrl("manifest.mpd") });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error.category).toBe(SHAKA_CATEGORY_DRM);
  });
});
