import type { fixtureTags } from "../../media/rtmp/test-support.ts";

export type Tags = Awaited<ReturnType<typeof fixtureTags>>;

/**
 * The fixture's media `times` over, timestamps running on; its metadata and sequence headers once (FLV tag bodies):
 * a broadcast that stays on air as long as a test needs (paced `realtime`, closed when the test is done).
 */
export function looped(tags: Tags, times: number): Tags {
  const span = tags.at(-1)!.timestamp + 40;
  const header = (m: Tags[number]) => m.type === "data" || (m.type === "video" && m.payload[1] === 0) || (m.type === "audio" && m.payload[0]! >> 4 === 10 && m.payload[1] === 0);
  const out: Tags = [];
  for (let k = 0; k < times; k++) for (const m of tags) if (k === 0 || !header(m)) out.push({ ...m, timestamp: m.timestamp + k * span });
  return out;
}
