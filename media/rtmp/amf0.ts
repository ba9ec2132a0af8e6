/**
 * AMF0, the encoding of RTMP command and data messages. Only the types
 * encoders actually send are supported; anything else (reference, date, XML,
 * typed object, AMF3 switch...) is refused with Amf0DecodeError, which closes
 * the connection: a server that skips unknown types would have to guess their
 * length, and guessing is how parsers get exploited.
 */
import { Amf0DecodeError, Amf0EncodeError } from "./errors.ts";

export const AMF0_MARKER = {
  number: 0x00,
  boolean: 0x01,
  string: 0x02,
  object: 0x03,
  null: 0x05,
  undefined: 0x06,
  ecmaArray: 0x08,
  objectEnd: 0x09,
  strictArray: 0x0a,
  longString: 0x0c,
} as const;

export type Amf0Value = number | boolean | string | null | undefined | Amf0Object | Amf0Value[];
export interface Amf0Object {
  [key: string]: Amf0Value;
}

/**
 * ECMA arrays and objects both decode to plain objects; this hidden mark keeps
 * the difference so a decoded onMetaData (an ECMA array) re-encodes byte for
 * byte. Use `amf0EcmaArray()` to build one.
 */
const ECMA_ARRAY = Symbol("amf0.ecmaArray");

export function amf0EcmaArray<T extends Amf0Object>(entries: T): T {
  Object.defineProperty(entries, ECMA_ARRAY, { value: true, enumerable: false });
  return entries;
}

export function isAmf0EcmaArray(value: unknown): boolean {
  return typeof value === "object" && value !== null && (value as Record<symbol, unknown>)[ECMA_ARRAY] === true;
}

/** Deep enough for any real command or metadata; stops stack exhaustion from hostile nesting. */
const MAX_DEPTH = 32;

const textDecoder = new TextDecoder();
const textEncoder = new TextEncoder();

/** Decodes every value in `bytes` (a command: name, transaction id, object, args...). */
export function decodeAmf0(bytes: Uint8Array): Amf0Value[] {
  const reader = new Amf0Reader(bytes);
  const values: Amf0Value[] = [];
  while (reader.offset < bytes.length) values.push(reader.value(0));
  return values;
}

/** Decodes one value starting at `offset`; returns it with the offset after it. */
export function decodeAmf0Value(bytes: Uint8Array, offset = 0): { value: Amf0Value; end: number } {
  const reader = new Amf0Reader(bytes, offset);
  const value = reader.value(0);
  return { value, end: reader.offset };
}

class Amf0Reader {
  private readonly view: DataView;
  constructor(
    private readonly bytes: Uint8Array,
    public offset = 0,
  ) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }

  value(depth: number): Amf0Value {
    if (depth > MAX_DEPTH) throw new Amf0DecodeError(`nesting deeper than ${MAX_DEPTH}`);
    const marker = this.u8();
    switch (marker) {
      case AMF0_MARKER.number: {
        this.need(8);
        const v = this.view.getFloat64(this.offset);
        this.offset += 8;
        return v;
      }
      case AMF0_MARKER.boolean:
        return this.u8() !== 0;
      case AMF0_MARKER.string:
        return this.utf8(this.u16());
      case AMF0_MARKER.longString:
        return this.utf8(this.u32());
      case AMF0_MARKER.object:
        return this.properties(depth, {});
      case AMF0_MARKER.ecmaArray:
        // The count is only a hint (encoders get it wrong); the end marker is authoritative.
        this.u32();
        return this.properties(depth, amf0EcmaArray({}));
      case AMF0_MARKER.strictArray: {
        const count = this.u32();
        // Every element takes at least one byte: a count larger than what is left is a lie.
        if (count > this.bytes.length - this.offset) throw new Amf0DecodeError(`strict array of ${count} elements overruns the message`);
        const items: Amf0Value[] = [];
        for (let i = 0; i < count; i++) items.push(this.value(depth + 1));
        return items;
      }
      case AMF0_MARKER.null:
        return null;
      case AMF0_MARKER.undefined:
        return undefined;
      case AMF0_MARKER.objectEnd:
        throw new Amf0DecodeError(`object-end marker outside an object at offset ${this.offset - 1}`);
      default:
        throw new Amf0DecodeError(`unsupported AMF0 type 0x${marker.toString(16).padStart(2, "0")} at offset ${this.offset - 1}`);
    }
  }

  private properties(depth: number, target: Amf0Object): Amf0Object {
    for (;;) {
      const key = this.utf8(this.u16());
      if (key === "" && this.bytes[this.offset] === AMF0_MARKER.objectEnd) {
        this.offset++;
        return target;
      }
      // defineProperty, not assignment: a key named "__proto__" must stay data, not swap the prototype.
      Object.defineProperty(target, key, { value: this.value(depth + 1), enumerable: true, writable: true, configurable: true });
    }
  }

  private need(n: number): void {
    if (this.offset + n > this.bytes.length) throw new Amf0DecodeError(`truncated AMF0 value at offset ${this.offset}`);
  }
  private u8(): number {
    this.need(1);
    return this.bytes[this.offset++]!;
  }
  private u16(): number {
    this.need(2);
    const v = this.view.getUint16(this.offset);
    this.offset += 2;
    return v;
  }
  private u32(): number {
    this.need(4);
    const v = this.view.getUint32(this.offset);
    this.offset += 4;
    return v;
  }
  private utf8(length: number): string {
    this.need(length);
    const s = textDecoder.decode(this.bytes.subarray(this.offset, this.offset + length));
    this.offset += length;
    return s;
  }
}

/** Encodes values back to back, as a command or data message body. */
export function encodeAmf0(...values: Amf0Value[]): Uint8Array {
  const writer = new Amf0Writer();
  for (const v of values) writer.value(v, 0, new Set());
  return writer.finish();
}

class Amf0Writer {
  private buf = new Uint8Array(256);
  private view = new DataView(this.buf.buffer);
  private length = 0;

  value(v: Amf0Value, depth: number, seen: Set<object>): void {
    if (depth > MAX_DEPTH) throw new Amf0EncodeError(`nesting deeper than ${MAX_DEPTH}`);
    if (v === null) return this.u8(AMF0_MARKER.null);
    if (v === undefined) return this.u8(AMF0_MARKER.undefined);
    switch (typeof v) {
      case "number":
        this.u8(AMF0_MARKER.number);
        this.ensure(8);
        this.view.setFloat64(this.length, v);
        this.length += 8;
        return;
      case "boolean":
        this.u8(AMF0_MARKER.boolean);
        return this.u8(v ? 1 : 0);
      case "string": {
        const bytes = textEncoder.encode(v);
        if (bytes.length > 0xffff) {
          this.u8(AMF0_MARKER.longString);
          this.u32(bytes.length);
        } else {
          this.u8(AMF0_MARKER.string);
          this.u16(bytes.length);
        }
        return this.raw(bytes);
      }
      case "object": {
        if (seen.has(v)) throw new Amf0EncodeError("cyclic value");
        seen.add(v);
        if (Array.isArray(v)) {
          this.u8(AMF0_MARKER.strictArray);
          this.u32(v.length);
          for (const item of v) this.value(item, depth + 1, seen);
        } else {
          const entries = Object.entries(v);
          if (isAmf0EcmaArray(v)) {
            this.u8(AMF0_MARKER.ecmaArray);
            this.u32(entries.length);
          } else {
            this.u8(AMF0_MARKER.object);
          }
          for (const [key, item] of entries) {
            const keyBytes = textEncoder.encode(key);
            if (keyBytes.length > 0xffff) throw new Amf0EncodeError("property name longer than 65535 bytes");
            this.u16(keyBytes.length);
            this.raw(keyBytes);
            this.value(item, depth + 1, seen);
          }
          this.u16(0);
          this.u8(AMF0_MARKER.objectEnd);
        }
        seen.delete(v);
        return;
      }
      default:
        throw new Amf0EncodeError(`cannot encode a ${typeof v} as AMF0`);
    }
  }

  finish(): Uint8Array {
    return this.buf.slice(0, this.length);
  }

  private ensure(n: number): void {
    if (this.length + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.length + n) size *= 2;
    const next = new Uint8Array(size);
    next.set(this.buf.subarray(0, this.length));
    this.buf = next;
    this.view = new DataView(next.buffer);
  }
  private u8(v: number): void {
    this.ensure(1);
    this.buf[this.length++] = v;
  }
  private u16(v: number): void {
    this.ensure(2);
    this.view.setUint16(this.length, v);
    this.length += 2;
  }
  private u32(v: number): void {
    this.ensure(4);
    this.view.setUint32(this.length, v);
    this.length += 4;
  }
  private raw(bytes: Uint8Array): void {
    this.ensure(bytes.length);
    this.buf.set(bytes, this.length);
    this.length += bytes.length;
  }
}
