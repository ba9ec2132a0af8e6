import { describe, expect, test } from "bun:test";
import { readFlvTags } from "../flv/flv-reader.ts";
import { amf0EcmaArray, decodeAmf0, encodeAmf0, isAmf0EcmaArray, type Amf0Value } from "./amf0.ts";
import { Amf0DecodeError, Amf0EncodeError } from "./errors.ts";
import { FIXTURE_PATH } from "./test-support.ts";

const hex = (b: Uint8Array) => Buffer.from(b).toString("hex");

describe("AMF0", () => {
  test("encodes the wire forms encoders expect", () => {
    expect(hex(encodeAmf0("connect"))).toBe("0200" + "07" + Buffer.from("connect").toString("hex"));
    expect(hex(encodeAmf0(1))).toBe("003ff0000000000000");
    expect(hex(encodeAmf0(true, false))).toBe("01010100");
    expect(hex(encodeAmf0(null, undefined))).toBe("0506");
    expect(hex(encodeAmf0({ a: 1 }))).toBe("03" + "0001" + "61" + "003ff0000000000000" + "000009");
    expect(hex(encodeAmf0(amf0EcmaArray({})))).toBe("08" + "00000000" + "000009");
    expect(hex(encodeAmf0([1]))).toBe("0a" + "00000001" + "003ff0000000000000");
  });

  test("round-trips every supported type", () => {
    const values: Amf0Value[] = [
      "connect",
      1.5,
      -0,
      Number.MAX_SAFE_INTEGER,
      true,
      false,
      null,
      undefined,
      { app: "live", nested: { deep: [1, "two", null, { three: 3 }] }, empty: "" },
      amf0EcmaArray({ duration: 6, width: 640, encoder: "Lavf" }),
      [],
      "x".repeat(70_000), // long string
      "ünïcødé ✓",
    ];
    const decoded = decodeAmf0(encodeAmf0(...values));
    expect(decoded).toEqual(values);
    expect(isAmf0EcmaArray(decoded[9])).toBe(true);
    expect(isAmf0EcmaArray(decoded[8])).toBe(false);
    expect(encodeAmf0("x".repeat(70_000))[0]).toBe(0x0c);
  });

  test("the fixture's onMetaData (an ECMA array) re-encodes byte for byte", async () => {
    const bytes = new Uint8Array(await Bun.file(FIXTURE_PATH).arrayBuffer());
    const script = [...readFlvTags(bytes)].find((t) => t.type === "data")!;
    const values = decodeAmf0(script.payload);
    expect(values[0]).toBe("onMetaData");
    expect((values[1] as Record<string, Amf0Value>).width).toBe(640);
    expect(hex(encodeAmf0(...values))).toBe(hex(script.payload));
  });

  test("refuses types outside the supported set", () => {
    const date = new Uint8Array([0x0b, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
    const reference = new Uint8Array([0x07, 0, 1]);
    const amf3 = new Uint8Array([0x11, 0x01]);
    const typedObject = new Uint8Array([0x10, 0, 1, 0x41]);
    for (const bytes of [date, reference, amf3, typedObject, new Uint8Array([0xff])]) {
      expect(() => decodeAmf0(bytes)).toThrow(Amf0DecodeError);
    }
  });

  test("refuses malformed input instead of guessing", () => {
    expect(() => decodeAmf0(new Uint8Array([0x02, 0x00, 0x05, 0x61]))).toThrow(/truncated/);
    expect(() => decodeAmf0(new Uint8Array([0x00, 1, 2]))).toThrow(/truncated/);
    expect(() => decodeAmf0(new Uint8Array([0x03, 0x00, 0x01, 0x61, 0x05]))).toThrow(/truncated/); // no object end
    expect(() => decodeAmf0(new Uint8Array([0x09]))).toThrow(/object-end/);
    // A strict array claiming 4 billion elements in a 5-byte message.
    expect(() => decodeAmf0(new Uint8Array([0x0a, 0xff, 0xff, 0xff, 0xff]))).toThrow(/overruns/);
    // Hostile nesting: 1000 nested one-element arrays must not blow the stack.
    const nested = new Uint8Array(5 * 1000);
    for (let i = 0; i < 1000; i++) nested.set([0x0a, 0, 0, 0, 1], i * 5);
    expect(() => decodeAmf0(nested)).toThrow(/nesting/);
  });

  test('a "__proto__" key stays data', () => {
    const bytes = new Uint8Array([0x03, 0x00, 0x09, ...Buffer.from("__proto__"), 0x05, 0x00, 0x00, 0x09]);
    const [object] = decodeAmf0(bytes) as [Record<string, unknown>];
    expect(Object.getPrototypeOf(object)).toBe(Object.prototype);
    expect(Object.keys(object)).toEqual(["__proto__"]);
  });

  test("refuses to encode what AMF0 cannot carry", () => {
    expect(() => encodeAmf0((() => 1) as unknown as Amf0Value)).toThrow(Amf0EncodeError);
    const cyclic: Record<string, Amf0Value> = {};
    cyclic.self = cyclic;
    expect(() => encodeAmf0(cyclic)).toThrow(Amf0EncodeError);
  });
});
