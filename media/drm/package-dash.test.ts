/** The real Shaka Packager binary on fixture MP4s, checked with ffmpeg. */
import { afterAll, afterEach, describe, expect, setDefaultTimeout, test } from "bun:test";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { closeMediaTools } from "../test-support/media-tools.ts";
import { keyIdAsUuid } from "./drm-key.ts";
import { InvalidDrmKeyError, PackagerUnavailableError, PackagingFailedError } from "./errors.ts";
import { COMMON_SYSTEM_SCHEME } from "./index.ts";
import { CLEARKEY_SYSTEM_SCHEME, mpdProtection, mpdRepresentations } from "./mpd.ts";
import { buildPackagerArgs, packageDash, type DashInput } from "./package-dash.ts";
import { findPackager, packagerBinary } from "./packager-binary.ts";
import { countVideoFrames, decodeSegments, expectLocked } from "./test-support/dash-checks.ts";

setDefaultTimeout(120_000);

const FIXTURES = path.resolve(import.meta.dir, "../../fixtures");
const DRM = { keyId: "0123456789abcdef0123456789abcdef", key: "fedcba9876543210fedcba9876543210" };
const INPUTS: DashInput[] = [
  { name: "small", file: path.join(FIXTURES, "av-360p-2s.mp4"), video: true, audio: true },
  { name: "mute", file: path.join(FIXTURES, "video-only-2s.mp4"), video: true, audio: false },
];

const dirs: string[] = [];
const tempDir = () => {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), "package-dash-"));
  dirs.push(d);
  return d;
};
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});
afterAll(() => closeMediaTools());

describe("packager binary", () => {
  test("npm shaka-packager's linux-x64 binary is installed and executable; other platforms are a named error", () => {
    if (process.platform === "linux" && process.arch === "x64") expect(packagerBinary()).toEndWith("node_modules/shaka-packager/bin/packager-linux-x64");
    expect(findPackager("sunos", "x64")).toBeNull();
    expect(() => packagerBinary("sunos", "x64")).toThrow(PackagerUnavailableError);
    expect(() => packagerBinary("sunos", "x64")).toThrow(/no executable binary for sunos-x64/);
  });
});

describe("packageDash", () => {
  test("encrypted DASH: static MPD with the key id and the common-system PSSH; every segment decrypts, none decodes without the key", async () => {
    const outDir = path.join(tempDir(), "dash");
    const res = await packageDash({ inputs: INPUTS, outDir, drm: DRM, segmentSeconds: 1 });
    expect(res.manifest).toBe("manifest.mpd");
    expect(res.renditions).toEqual([
      { name: "small", mpd: "small.mpd" },
      { name: "mute", mpd: "mute.mpd" },
    ]);
    expect(res.durationSeconds).toBeCloseTo(2, 0);
    expect(res.packagingMs).toBeGreaterThan(0);

    const mpd = fs.readFileSync(path.join(outDir, "manifest.mpd"), "utf8");
    expect(mpd).toContain('type="static"');
    const protection = mpdProtection(mpd);
    expect(protection.schemes).toContain("urn:mpeg:dash:mp4protection:2011");
    // The MPD names the ClearKey system (no PSSH: dash.js builds its request from the default KID); the init
    // segments carry the W3C common-system PSSH box.
    expect(protection.schemes).toContain(CLEARKEY_SYSTEM_SCHEME);
    expect(protection.schemes).not.toContain(COMMON_SYSTEM_SCHEME);
    expect(mpd).not.toContain("cenc:pssh");
    const commonSystemId = Buffer.from(COMMON_SYSTEM_SCHEME.slice("urn:uuid:".length).replace(/-/g, ""), "hex");
    for (const rep of mpdRepresentations(mpd)) expect([rep.initialization, fs.readFileSync(path.join(outDir, rep.initialization)).includes(commonSystemId)]).toEqual([rep.initialization, true]);
    expect(new Set(protection.defaultKids)).toEqual(new Set([keyIdAsUuid(DRM.keyId)]));
    expect(mpd).toMatch(/<ContentProtection[^>]*value="cenc"/);
    expect(mpd).not.toContain(DRM.key);
    const reps = mpdRepresentations(mpd);
    expect(reps.map((r) => [r.rendition, r.contentType])).toEqual([
      ["small", "video"],
      ["mute", "video"],
      ["small", "audio"],
    ]);

    for (const rep of reps) {
      const clear = await decodeSegments(outDir, rep, DRM.key);
      expect(clear.length).toBeGreaterThanOrEqual(2);
      for (const s of clear) {
        expect({ segment: s.segment, exitCode: s.exitCode, stderr: s.stderr }).toEqual({ segment: s.segment, exitCode: 0, stderr: "" });
        expect(s.hashes.length).toBeGreaterThan(0);
      }
      if (rep.contentType === "video") {
        const source = INPUTS.find((i) => i.name === rep.rendition)!.file;
        expect(clear.reduce((n, s) => n + s.hashes.length, 0)).toBe(await countVideoFrames(source));
      }
      expectLocked(await decodeSegments(outDir, rep, undefined), clear, rep.contentType);
    }
  }, 120_000);

  test("each rendition's own MPD names only that rendition, with the same protection", async () => {
    const outDir = path.join(tempDir(), "dash");
    await packageDash({ inputs: INPUTS, outDir, drm: DRM, segmentSeconds: 1 });
    for (const name of ["small", "mute"]) {
      const mpd = fs.readFileSync(path.join(outDir, `${name}.mpd`), "utf8");
      const reps = mpdRepresentations(mpd);
      expect(reps.length).toBeGreaterThan(0);
      expect(reps.every((r) => r.rendition === name)).toBe(true);
      expect(mpd).not.toContain(name === "small" ? "mute/" : "small/");
      expect(new Set(mpdProtection(mpd).defaultKids)).toEqual(new Set([keyIdAsUuid(DRM.keyId)]));
      expect(mpdProtection(mpd).schemes).toContain(CLEARKEY_SYSTEM_SCHEME);
    }
    expect(mpdRepresentations(fs.readFileSync(path.join(outDir, "small.mpd"), "utf8")).map((r) => r.contentType)).toEqual(["video", "audio"]);
  }, 120_000);

  test("the key goes on stdin, never in the argv", () => {
    const args = buildPackagerArgs({ inputs: INPUTS, outDir: "/tmp/x/dash", segmentSeconds: 4 });
    expect(args.join(" ")).not.toContain(DRM.key);
    expect(args).toContain("--flagfile=/dev/stdin");
    expect(args).toEqual(expect.arrayContaining(["--protection_scheme", "cenc", "--protection_systems", "CommonSystem", "--clear_lead", "0", "--generate_static_live_mpd"]));
  });

  test("a packager failure is a PackagingFailedError with the packager's own message and without the key", async () => {
    const outDir = path.join(tempDir(), "dash");
    const err = await packageDash({ inputs: [{ name: "bad", file: path.join(FIXTURES, "corrupt.mp4"), video: true, audio: false }], outDir, drm: DRM, segmentSeconds: 1 }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(PackagingFailedError);
    const e = err as PackagingFailedError;
    expect(e.message).toMatch(/^Shaka Packager failed \(exit [1-9]\d*\)/);
    expect(e.logTail.length).toBeGreaterThan(0);
    expect(JSON.stringify([e.message, e.logTail])).not.toContain(DRM.key);
  });

  test("a malformed key is refused without being echoed; a missing binary is PackagerUnavailableError", async () => {
    const outDir = path.join(tempDir(), "dash");
    const bad = await packageDash({ inputs: INPUTS, outDir, drm: { keyId: DRM.keyId, key: "secret-but-not-hex" }, segmentSeconds: 1 }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(InvalidDrmKeyError);
    expect((bad as Error).message).not.toContain("secret-but-not-hex");
    const missing = await packageDash({ inputs: INPUTS, outDir, drm: DRM, segmentSeconds: 1, packager: path.join(outDir, "no-such-packager") }).catch((e: unknown) => e);
    expect(missing).toBeInstanceOf(PackagerUnavailableError);
  });

  test("aborting kills the packager and rejects with the signal's reason", async () => {
    const outDir = path.join(tempDir(), "dash");
    const c = new AbortController();
    const reason = new Error("stop now");
    // A packager that never finishes on its own stands in for a slow one.
    const running = packageDash({ inputs: INPUTS, outDir, drm: DRM, segmentSeconds: 1, signal: c.signal, wrapArgv: () => ["sleep", "30"] });
    await Bun.sleep(50);
    c.abort(reason);
    expect(await running.catch((e: unknown) => e)).toBe(reason);
  });
});
