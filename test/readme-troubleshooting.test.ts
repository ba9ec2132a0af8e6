/**
 * The README's Troubleshooting table says what the service really answers
 * (issue 23, item 14): each situation is produced against a running service
 * and the row for it must name what a user then sees (the status, the error
 * code, ffmpeg's own words).
 */
import { afterAll, beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { waitFor } from "./support/events.ts";
import { startTestService, type TestService } from "./support/test-service.ts";
import { ok } from "./support/api.ts";

// Starts processes: a loaded 2-core machine needs more than bun's 5 s default (test/suite-timeouts.test.ts).
setDefaultTimeout(120_000);

const README = readFileSync(join(import.meta.dir, "../README.md"), "utf8");
const section = README.slice(README.indexOf("## Troubleshooting"), README.indexOf("\n## ", README.indexOf("## Troubleshooting") + 5));
/** Each row as [you see, because, do]. */
const rows = section
  .split("\n")
  .filter((l) => l.startsWith("| ") && !l.startsWith("| You see") && !l.startsWith("|---"))
  .map((l) => l.split(" | ").map((c) => c.replace(/^\| |\s*\|$/g, "")));
const rowFor = (seen: string) => rows.find((r) => r[0]!.includes(seen));

let t: TestService;
let page: ReturnType<typeof Bun.serve>;
beforeAll(async () => {
  t = await startTestService({ env: { RTMP_PORT: "0", ALLOW_PRIVATE_NETWORK: "1", MEDIA_BACKEND: "native" } });
  // A web page where a video was expected.
  page = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("<!doctype html><html><body><h1>My video page</h1></body></html>", { headers: { "content-type": "text/html" } }) });
}, 60_000);
afterAll(async () => {
  page?.stop(true);
  await t?.stop({ cleanup: true });
});

test("a reused upload URL: the row names the status the PUT answers", async () => {
  const slot = (await ok(t.api("/videos/upload-url/", { method: "POST", json: { filename: "a.mp4" } }), "createUploadUrl")).data;
  expect((await fetch(slot.upload_url, { method: "PUT", body: "x".repeat(100) })).status).toBe(200);
  const again = await fetch(slot.upload_url, { method: "PUT", body: "x".repeat(100) });
  const row = rowFor(`Upload \`PUT\` answers ${again.status}`);
  expect(row, `no row for a PUT answering ${again.status}`).toBeDefined();
  expect(row![1]).toContain("used");
  // An altered (or expired) signature is the other answer, with its own row.
  const forged = await fetch(slot.upload_url.replace(/sig=[^&]+/, "sig=00"), { method: "PUT", body: "x" });
  expect(rowFor(`Upload \`PUT\` answers ${forged.status}`)?.[1]).toContain("expired");
}, 60_000);

test("a web page as source_url: the row names the failure code the video gets", async () => {
  const res = await t.api("/videos/", { method: "POST", json: { source_url: `http://127.0.0.1:${page.port}/watch?v=1`, title: "A page" } });
  expect(res.status).toBe(201);
  const id = (await ok(res, "createVideo")).data.video.id;
  const error = await waitFor(
    async () => {
      const data = (await ok(t.api(`/videos/${id}/`), "getVideo")).data;
      return data.video.status === "ERROR" ? data.error : undefined;
    },
    { timeoutMs: 90_000, what: "the page's video in ERROR" },
  );
  const row = rows.find((r) => r[0]!.includes(error.code) && r[1]!.includes("web page"));
  expect(row, `no row says a web page gives ${error.code}`).toBeDefined();
}, 120_000);

/** ffmpeg pushing to `url`: its stderr (the README's flags, 2 s of a test pattern). */
async function push(url: string) {
  const p = Bun.spawn(
    ["ffmpeg", "-hide_banner", "-loglevel", "error", "-re", "-f", "lavfi", "-i", "testsrc2=size=320x180:rate=30", "-t", "2", "-c:v", "libx264", "-preset", "veryfast", "-f", "flv", url],
    { stderr: "pipe" },
  );
  const [stderr, code] = await Promise.all([new Response(p.stderr).text(), p.exited]);
  expect(code).not.toBe(0);
  return stderr;
}

test("a wrong rtmp_url and an ended stream: the rows quote what ffmpeg prints", async () => {
  const stream = (await ok(t.api("/livestreams/", { method: "POST", json: { title: "Trouble" } }), "createLivestream")).data.stream;
  const wrong = await push(stream.rtmp_url.replace(/sig=[0-9a-f]{4}/, "sig=0000"));
  const wrongText = /Server error: ([^\n]+)/.exec(wrong)?.[1];
  expect(wrongText, wrong).toBeDefined();
  const wrongRow = rowFor(wrongText!);
  expect(wrongRow, `no row quotes ffmpeg's "${wrongText}"`).toBeDefined();
  expect(wrongRow![0]).toContain("Operation not permitted");
  expect(wrong).toContain("Operation not permitted");

  await (await t.api(`/livestreams/${stream.id}/end/`, { method: "POST" })).text();
  const ended = await push(stream.rtmp_url);
  const endedText = /Server error: ([^\n]+)/.exec(ended)?.[1];
  expect(rowFor(endedText!), `no row quotes ffmpeg's "${endedText}"`).toBeDefined();
}, 120_000);
