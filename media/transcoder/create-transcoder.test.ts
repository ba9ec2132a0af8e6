import { describe, expect, setDefaultTimeout, test } from "bun:test";
import { createTranscoder, resolveBackend } from "./create-transcoder.ts";
import { hasNativeFfmpeg } from "./has-native-ffmpeg.ts";

setDefaultTimeout(120_000);

describe("createTranscoder", () => {
  test("auto prefers native when ffmpeg is installed", () => {
    expect(resolveBackend("auto")).toBe(hasNativeFfmpeg() ? "native" : "wasm");
    expect(resolveBackend("wasm")).toBe("wasm");
  });

  test("ids are <backend>-<host>-<pid>-<n> and differ per instance", async () => {
    const a = createTranscoder({ backend: "wasm", workers: 1 });
    const b = createTranscoder({ backend: "wasm", workers: 1 });
    expect(a.backend).toBe("wasm");
    expect(a.id).toMatch(new RegExp(`^wasm-[A-Za-z0-9._-]+-${process.pid}-\\d+$`));
    expect(a.id).not.toBe(b.id);
    await Promise.all([a.close(), b.close()]);
  });

  test("a closed transcoder refuses work with CANCELLED", async () => {
    const t = createTranscoder({ backend: "wasm", workers: 1 });
    await t.close();
    await expect(t.probe("/nonexistent.mp4")).rejects.toMatchObject({ code: "CANCELLED" });
  });
});
