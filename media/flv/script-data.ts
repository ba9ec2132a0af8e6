/**
 * RTMP encoders send metadata as `@setDataFrame("onMetaData", {...})`; in an
 * FLV file the script tag must start at `"onMetaData"`, or players ignore it.
 */
const SET_DATA_FRAME = new TextEncoder().encode("@setDataFrame");

/** Returns the body without a leading AMF0 string "@setDataFrame" (a view, no copy). */
export function stripSetDataFrame(body: Uint8Array): Uint8Array {
  const prefix = 3 + SET_DATA_FRAME.length; // AMF0 string marker (0x02) + u16 length + chars
  if (body.length < prefix || body[0] !== 0x02) return body;
  if (((body[1]! << 8) | body[2]!) !== SET_DATA_FRAME.length) return body;
  for (let i = 0; i < SET_DATA_FRAME.length; i++) if (body[3 + i] !== SET_DATA_FRAME[i]) return body;
  return body.subarray(prefix);
}
