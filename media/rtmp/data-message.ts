/**
 * Data messages (type 18) from encoders wrap metadata as
 * `"@setDataFrame", "onMetaData", {...}`: the wrapper tells a server to keep
 * the frame for late joiners. An FLV script tag holds only
 * `"onMetaData", {...}`, which is what the sink gets.
 */
import { decodeAmf0, decodeAmf0Value } from "./amf0.ts";
import { Amf0DecodeError } from "./errors.ts";

export type DataMessageAction = { kind: "deliver"; payload: Uint8Array } | { kind: "ignore"; name: string };

export function interpretDataMessage(body: Uint8Array): DataMessageAction {
  // Decode everything once, so malformed AMF0 never reaches FLV files or the HLS muxer.
  decodeAmf0(body);
  const first = decodeAmf0Value(body, 0);
  if (typeof first.value !== "string") throw new Amf0DecodeError("data message does not start with a name");
  if (first.value === "@setDataFrame") {
    const rest = body.subarray(first.end);
    if (rest.length === 0) throw new Amf0DecodeError("@setDataFrame without a frame");
    return { kind: "deliver", payload: rest };
  }
  // Clearing a kept frame means nothing to a recorder or a live packager.
  if (first.value === "@clearDataFrame") return { kind: "ignore", name: first.value };
  return { kind: "deliver", payload: body };
}
