import { describe, expect, setDefaultTimeout, test } from "bun:test";
import * as path from "node:path";
import { createTranscriber, sttUnavailableReason } from "./create-transcriber.ts";
import { findPocketsphinx } from "./pocketsphinx.ts";

setDefaultTimeout(120_000);

/** Runs createTranscriber in a child whose PATH holds only bun: no pocketsphinx, no ffmpeg. */
async function inBareChild(modelPath?: string): Promise<{ name: string | null; reason: string }> {
  const script = `import { createTranscriber, sttUnavailableReason } from ${JSON.stringify(path.join(import.meta.dir, "create-transcriber.ts"))};
const t = await createTranscriber(${JSON.stringify(modelPath ? { modelPath } : {})});
console.log(JSON.stringify({ name: t?.name ?? null, reason: sttUnavailableReason() }));`;
  const proc = Bun.spawn([process.execPath, "-e", script], { env: { PATH: path.dirname(process.execPath), HOME: process.env.HOME ?? "/tmp" }, stdout: "pipe", stderr: "pipe" });
  const out = await new Response(proc.stdout).text();
  const err = await new Response(proc.stderr).text();
  expect(await proc.exited, err).toBe(0);
  return JSON.parse(out.trim().split("\n").at(-1) ?? "{}");
}

describe("createTranscriber", () => {
  test("no engine (no pocketsphinx on PATH, no model): null, and the reason names the apt-get line", async () => {
    const r = await inBareChild();
    expect(r.name).toBeNull();
    expect(r.reason).toContain("apt-get install -y pocketsphinx pocketsphinx-en-us");
    expect(r.reason).toContain("STT_MODEL_PATH");
    expect(sttUnavailableReason()).toBe(r.reason);
  });

  test("an STT_MODEL_PATH that names no model is skipped, not fatal", async () => {
    expect((await inBareChild("/nonexistent/model")).name).toBeNull();
    const t = await createTranscriber({ modelPath: "/nonexistent/model" });
    expect(t?.name ?? null).toBe(findPocketsphinx() ? "pocketsphinx" : null);
  });

  test.skipIf(!findPocketsphinx())("pocketsphinx installed: the pocketsphinx engine", async () => {
    const t = await createTranscriber();
    expect(t?.name).toBe("pocketsphinx");
    await t?.close();
  });
});
