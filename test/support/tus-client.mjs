// A tus-js-client process, as an application runs one (test/uploads-tus.test.ts):
//   node tus-client.mjs start  ENDPOINT KEY FILE   → sends the first chunk, prints {url}, then dies (exit without finishing)
//   node tus-client.mjs resume URL      KEY FILE   → a fresh process resumes URL to the end, prints {sourceUrl, url, sawSourceUrl}
import { readFileSync } from "node:fs";
import * as tus from "tus-js-client";

const [mode, target, key, path] = process.argv.slice(2);
const file = readFileSync(path);
const headers = { Authorization: `Bearer ${key}` };
const chunkSize = 64 * 1024;
const print = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);

if (mode === "start") {
  const upload = new tus.Upload(file, {
    endpoint: target,
    headers,
    chunkSize,
    metadata: { filename: "clip.mp4" },
    // The process dies after its first chunk: nothing it learnt survives but what it printed (the upload URL).
    onChunkComplete: () => {
      print({ url: upload.url });
      process.exit(0);
    },
    onError: (err) => {
      console.error(String(err));
      process.exit(1);
    },
  });
  upload.start();
} else {
  // The README's recipe: X-Source-Url from whichever answer carries it first; here the first answer is a HEAD.
  let sourceUrl;
  const sawSourceUrl = [];
  const upload = new tus.Upload(file, {
    uploadUrl: target,
    headers,
    chunkSize,
    onAfterResponse: (req, res) => {
      const value = res.getHeader("X-Source-Url");
      if (value) sawSourceUrl.push(req.getMethod());
      sourceUrl ??= value;
    },
    onSuccess: () => print({ sourceUrl, url: upload.url, sawSourceUrl }),
    onError: (err) => {
      console.error(String(err));
      process.exit(1);
    },
  });
  upload.start();
}
