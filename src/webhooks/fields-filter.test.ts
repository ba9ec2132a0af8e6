import { afterEach, describe, expect, test } from "bun:test";
import { FIELD_PATH, filterFields, hasForbiddenSegment } from "./fields-filter.ts";

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

describe("hostile paths cannot reach a shared prototype", () => {
  const HOSTILE = [
    "__proto__.cursor",
    "constructor.prototype.cursor",
    "video.__proto__.cursor",
    "video.constructor.prototype.cursor",
    "renditions.__proto__.cursor",
    "renditions.constructor.prototype.cursor",
    "__proto__",
    "constructor",
    "prototype.cursor",
  ];
  afterEach(() => {
    // Only does anything if a test failed: keeps the pollution from leaking into the next ones.
    for (const proto of [Object.prototype, Array.prototype, Function.prototype]) delete (proto as any).cursor;
  });

  test("no path, alone or merged with ordinary ones, changes Object.prototype or Array.prototype", () => {
    for (const path of HOSTILE) {
      const out = filterFields(data, [path]);
      filterFields(data, ["video.id", path, "renditions.quality"]);
      expect([path, ({} as any).cursor, ([] as any).cursor, ((() => 0) as any).cursor]).toEqual([path, undefined, undefined, undefined]);
      // Selects nothing that is not the payload's own: at most the empty object on the way.
      expect([path, JSON.stringify(out)]).toEqual([path, expect.not.stringContaining("cursor")]);
      expect([path, JSON.stringify(out)]).toEqual([path, expect.not.stringContaining("function")]);
    }
  });

  test("a payload whose own keys are named __proto__ or constructor is copied, not assigned through", () => {
    const payload = JSON.parse('{"stream":{"tags":{"__proto__":{"cursor":1},"constructor":{"prototype":{"cursor":2}}}}}');
    const out = filterFields(payload, ["stream.tags.__proto__.cursor", "stream.tags.constructor.prototype.cursor"]) as any;
    expect(({} as any).cursor).toBeUndefined();
    expect(JSON.parse(JSON.stringify(out))).toEqual(JSON.parse('{"stream":{"tags":{"__proto__":{"cursor":1},"constructor":{"prototype":{"cursor":2}}}}}'));
  });

  test("the output is plain JSON: the same bytes as before for ordinary paths", () => {
    expect(JSON.stringify(filterFields(data, ["video.id", "renditions.quality", "error"]))).toBe('{"video":{"id":"vid_1"},"renditions":[{"quality":"360p"},{"quality":"720p"}],"error":null}');
  });

  test("hasForbiddenSegment names every segment that leads to a prototype", () => {
    for (const path of HOSTILE) expect([path, hasForbiddenSegment(path)]).toEqual([path, true]);
    for (const path of ["video.id", "video.constructor_name", "proto", "__proto", "prototypes.x", "stream.tags.team"]) expect([path, hasForbiddenSegment(path)]).toEqual([path, false]);
  });
});
