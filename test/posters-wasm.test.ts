/**
 * Issue 16, posters on the wasm backend: the same thumbnail and storyboard as
 * native (both backends run the same ffmpeg lists; the MJPEG encoder's
 * `-huffman default` is what keeps the wasm core from crashing, see
 * media/transcoder/posters.ts). test/posters.test.ts has the rest.
 */
import { expect, test } from "bun:test";
import { checkPosters, videoBackend } from "./support/posters.ts";

const wasm = videoBackend("wasm");

test("a 720p video on ffmpeg.wasm gets a 1280x720 thumbnail and a 3-tile storyboard", async () => {
  const id = (await wasm.register("av-720p-3s.mp4", "Wasm posters")).asset.public_id;
  const { cues } = await checkPosters(await wasm.completed(id), { width: 1280, height: 720, tileHeight: 90, duration: 3 });
  expect(cues).toHaveLength(3);
}, 90_000);
