import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { createServer, type Socket } from "node:net";
import { fixtureTags } from "../../../media/rtmp/test-support.ts";
import { startOutputSender } from "./output-sender.ts";
import { parseOutputTarget } from "./output-target.ts";

setDefaultTimeout(120_000);

// A platform that accepts the connection and never reads a byte.
const sockets: Socket[] = [];
const server = createServer((s) => {
  s.pause();
  sockets.push(s);
});
await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
const port = (server.address() as { port: number }).port;
afterAll(() => {
  for (const s of sockets) s.destroy();
  server.close();
});

test("a target that accepts and never reads: pushes return at once, the backlog stays bounded, the sender skips to keyframes", async () => {
  const r = parseOutputTarget(`rtmp://127.0.0.1:${port}/app`, "k");
  if (!r.ok) throw new Error(r.error);
  const tags = await fixtureTags();
  const headers = tags.filter((t) => t.type === "data" || t.payload[1] === 0).slice(0, 3);
  const exits: Array<string | null> = [];
  const limit = 256 * 1024;
  const sender = startOutputSender({ target: r.value, headers, bufferBytes: limit, events: { onActive: () => undefined, onBytes: () => undefined, onExit: (e) => exits.push(e) } });
  const last = tags.at(-1)!.timestamp;
  let pushed = 0;
  let maxBacklog = 0;
  // 20 passes of the 6 s fixture (about 120 s of media), as fast as possible: far more than the pipe and the buffer hold.
  for (let pass = 0; pass < 20; pass++) {
    for (const tag of tags) {
      sender.push({ ...tag, timestamp: tag.timestamp + pass * (last + 33) });
      pushed += tag.payload.length;
      maxBacklog = Math.max(maxBacklog, sender.backlog);
    }
    await Bun.sleep(5);
  }
  expect(pushed).toBeGreaterThan(10 * limit);
  expect(sender.skips).toBeGreaterThan(0);
  // At most the limit plus one tag (the largest keyframe of the fixture is well under 64 KiB).
  expect(maxBacklog).toBeLessThan(limit + 64 * 1024);
  sender.stop();
  await Bun.sleep(1500);
  expect(exits).toEqual([null]);
});
