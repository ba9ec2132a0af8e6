import { expect, test } from "bun:test";
import { FIELD_PATH, filterFields } from "./fields-filter.ts";

const data = {
  video: { id: "vid_1", title: "T", status: "COMPLETED", url: "https://x/m.m3u8" },
  renditions: [
    { quality: "360p", url: "a", download_url: null },
    { quality: "720p", url: "b", download_url: "d" },
  ],
  error: null,
  stream: null,
};

test("keeps only the chosen keys inside an object", () => {
  expect(filterFields(data, ["video.id", "video.status"])).toEqual({ video: { id: "vid_1", status: "COMPLETED" } });
});

test("an empty list keeps the whole payload", () => {
  expect(filterFields(data, [])).toBe(data);
});

test("a whole object wins over a path inside it, in either order", () => {
  expect(filterFields(data, ["video", "video.id"])).toEqual({ video: data.video });
  expect(filterFields(data, ["video.id", "video"])).toEqual({ video: data.video });
});

test("arrays are walked element by element", () => {
  expect(filterFields(data, ["renditions.quality"])).toEqual({ renditions: [{ quality: "360p" }, { quality: "720p" }] });
});

test("null and missing values: null is kept, a missing path keeps nothing", () => {
  expect(filterFields(data, ["stream.id", "error", "nope.x", "video.nope"])).toEqual({ stream: null, error: null, video: {} });
});

test("dot-path syntax", () => {
  for (const ok of ["video", "video.id", "a_b.c1"]) expect(FIELD_PATH.test(ok)).toBe(true);
  for (const bad of ["", ".video", "video.", "video..id", "video id", "video[0]", "a.*"]) expect(FIELD_PATH.test(bad)).toBe(false);
});
