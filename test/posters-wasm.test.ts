/**
 * Issue 16, posters on the wasm backend: the same thumbnail and storyboard as
 * native (both backends run the same ffmpeg lists; the MJPEG encoder's
 * `-huffman default` is what keeps the wasm core from crashing, see
 * media/transcoder/posters.ts). test/posters.test.ts has the rest.
 */
import { afterAll, beforeAll, expect, test } from "bun:test";
import { startFileServer } from "./support/file-server.ts";
import { checkPosters, completed, register } from "./support/posters.ts";
import { startTestService, type TestService } from "./support/test-service.ts";

const files = startFileServer();
let wasm: TestService;

beforeAll(async () => {
  wasm = await startTestService({ env: { MEDIA_BACKEND: "wasm" } });
});
afterAll(async () => {
  await wasm?.stop();
  files.stop();
});

test("a 720p video on ffmpeg.wasm gets a 1280x720 thumbnail and a 3-tile storyboard", async () => {
  const id = (await register(wasm, files.url("av-720p-3s.mp4"), "Wasm posters")).asset.public_id;
  const { cues } = await checkPosters(await completed(wasm, id), { width: 1280, height: 720, tileHeight: 90, duration: 3 });
  expect(cues).toHaveLength(3);
}, 90_000);
