import { expect, test } from "bun:test";
import { InvalidInput } from "../errors.ts";
import { parseEndpointInput } from "./endpoint-input.ts";

function detailsOf(body: unknown): Record<string, string> {
  try {
    parseEndpointInput(body);
  } catch (err) {
    expect(err).toBeInstanceOf(InvalidInput);
    expect((err as InvalidInput).code).toBe("VALIDATION_ERROR");
    return (err as InvalidInput).fields;
  }
  throw new Error("expected a validation error");
}

test("a valid body is normalised: duplicates removed, defaults filled", () => {
  expect(parseEndpointInput({ url: "https://example.com/hook", events: ["VIDEO_UPLOADED", "VIDEO_UPLOADED"] })).toEqual({
    url: "https://example.com/hook",
    events: ["VIDEO_UPLOADED"],
    fields: [],
    description: null,
  });
  expect(parseEndpointInput({ url: "https://example.com/", events: ["LIVESTREAM_ENDED"], fields: ["video.id", "stream"], description: "x" }).fields).toEqual(["video.id", "stream"]);
});

test("url: https only, absolute, no credentials", () => {
  expect(Object.keys(detailsOf({ url: "http://example.com/hook", events: ["VIDEO_UPLOADED"] }))).toEqual(["url"]);
  expect(detailsOf({ url: "http://example.com/hook", events: ["VIDEO_UPLOADED"] }).url).toContain("https");
  for (const url of [undefined, "", "example.com/hook", "ftp://example.com/", "https://u:p@example.com/", 42]) {
    expect(detailsOf({ url, events: ["VIDEO_UPLOADED"] })).toHaveProperty("url");
  }
});

test("events: at least one, all from the reference", () => {
  expect(detailsOf({ url: "https://e.com/", events: [] })).toHaveProperty("events");
  expect(detailsOf({ url: "https://e.com/" })).toHaveProperty("events");
  expect(detailsOf({ url: "https://e.com/", events: ["VIDEO_UPLOADED", "video.uploaded"] }).events).toContain('"video.uploaded"');
});

test("fields are dot-paths", () => {
  expect(detailsOf({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], fields: ["video..id"] })).toHaveProperty("fields");
  expect(detailsOf({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], fields: "video.id" })).toHaveProperty("fields");
});

test("fields: a segment __proto__, constructor or prototype is refused, naming the path", () => {
  for (const path of ["__proto__.x", "constructor.prototype.cursor", "video.__proto__", "video.constructor", "prototype", "stream.tags.prototype.x"]) {
    const details = detailsOf({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], fields: ["video.id", path] });
    expect(Object.keys(details)).toEqual(["fields"]);
    expect(details.fields).toContain(JSON.stringify(path));
    expect(details.fields).not.toContain('"video.id"');
  }
  expect(parseEndpointInput({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], fields: ["video.constructor_id", "proto.x"] }).fields).toEqual(["video.constructor_id", "proto.x"]);
});

test("description: at most 200 characters (code points)", () => {
  expect(parseEndpointInput({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], description: "é".repeat(200) }).description).toHaveLength(200);
  expect(parseEndpointInput({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], description: "😀".repeat(200) }).description).toBe("😀".repeat(200));
  expect(detailsOf({ url: "https://e.com/", events: ["VIDEO_UPLOADED"], description: "a".repeat(201) }).description).toContain("200");
});

test("every failing field is reported at once", () => {
  expect(Object.keys(detailsOf({ url: "http://e.com/", events: ["NOPE"], fields: [""], description: "a".repeat(201) })).sort()).toEqual(["description", "events", "fields", "url"]);
});
