/**
 * `npm run demo`: a first video in one command, against a service already
 * running (`npm start` in another terminal). It uploads a bundled fixture the
 * way an application would (POST /videos/upload-url/, PUT the bytes, POST
 * /videos/ with the returned source_url), polls GET /videos/{id}/ until the
 * transcode ends, then prints where to watch and download it.
 *
 * It starts nothing itself: a demo that spawned its own service would hide
 * the one step every user needs anyway (a running service and its key).
 */
import { statSync } from "node:fs";
import { basename, join, resolve } from "node:path";
import { clientServiceUrl, serviceOrigin } from "../src/service-address.ts";

const HELP = `Usage: npm run demo [-- --api-key KEY] [--api-url URL] [--file PATH] [--title TITLE]

Uploads a video file to a running service (start one with \`npm start\`),
waits until it is transcoded, and prints its HLS, watch and download URLs.

  --api-key KEY   the organization's API key (default: $VIDLIVE_API_KEY);
                  \`npm start\` prints it on its first start
  --api-url URL   the service's address, with or without /api/public/v1 (default: $VIDLIVE_API_URL,
                  else the address \`npm start\` recorded in $DATA_DIR or ./data, else http://localhost:8080)
  --file PATH     the video to upload (default: fixtures/av-720p-3s.mp4, 3 s, 720p)
  --title TITLE   the video's title (default: "Demo video")
  --help          this text`;

const DEFAULT_FILE = join(import.meta.dir, "..", "fixtures", "av-720p-3s.mp4");
const POLL_MS = 500;

class DemoError extends Error {}

const KEY_HELP = [
  '`npm start` prints the key once, on its first start: "API key (shown once): sk_live_…".',
  "Lost it? Make an organization with its own key: npm run cli -- org create --name demo",
].join("\n");

interface Options {
  apiKey: string;
  apiUrl: string;
  file: string;
  title: string;
}

function parseOptions(argv: string[], env: Record<string, string | undefined>): Options | null {
  const flags = new Map<string, string>();
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--help" || arg === "-h") return null;
    const [name, inline] = arg.split(/=(.*)/s, 2) as [string, string | undefined];
    if (!["--api-key", "--api-url", "--file", "--title"].includes(name)) throw new DemoError(`Unknown option ${name} (see npm run demo -- --help)`);
    const value = inline ?? argv[++i];
    if (value === undefined || value === "") throw new DemoError(`${name} needs a value`);
    flags.set(name, value);
  }
  // A missing key is reported after the service answered (main): "start the service" comes first.
  const apiKey = flags.get("--api-key") ?? env.VIDLIVE_API_KEY ?? "";
  const given = flags.get("--api-url");
  const apiUrl = given === undefined ? clientServiceUrl(env) : serviceOrigin(given);
  if (!/^https?:\/\//.test(apiUrl)) throw new DemoError(`--api-url must start with http:// or https://, got "${apiUrl}"`);
  return { apiKey, apiUrl, file: resolve(flags.get("--file") ?? DEFAULT_FILE), title: flags.get("--title") ?? "Demo video" };
}

/** One call of the public API; the envelope's `data`, or a DemoError that says what to do. */
async function call(opts: Options, method: string, path: string, body?: unknown): Promise<Record<string, unknown>> {
  let res: Response;
  try {
    res = await fetch(`${opts.apiUrl}/api/public/v1${path}`, {
      method,
      headers: { authorization: `Bearer ${opts.apiKey}`, ...(body === undefined ? {} : { "content-type": "application/json" }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (err) {
    throw new DemoError(
      [
        `Cannot reach the service at ${opts.apiUrl} (${(err as { code?: string }).code ?? (err as Error).message}).`,
        "Start it in another terminal in this folder: npm start",
        "(or point the demo at yours with --api-url or $VIDLIVE_API_URL)",
      ].join("\n"),
    );
  }
  const envelope = (await res.json().catch(() => null)) as { success?: boolean; message?: string; data?: Record<string, unknown>; error?: { code: string } } | null;
  if (!envelope || typeof envelope.success !== "boolean") throw new DemoError(`${opts.apiUrl} answered ${res.status} but is not this service (no API envelope).`);
  if (!envelope.success) {
    const code = envelope.error?.code ?? String(res.status);
    if (code === "INVALID_API_KEY")
      throw new DemoError(opts.apiKey ? `The service refused the API key (${code}).\n${KEY_HELP}` : `No API key. Pass --api-key sk_live_… or export VIDLIVE_API_KEY=sk_live_…\n${KEY_HELP}`);
    throw new DemoError(`${method} ${path} failed: ${code}: ${envelope.message ?? ""}`);
  }
  return envelope.data ?? {};
}

async function upload(opts: Options, file: string): Promise<string> {
  const size = statSync(file, { throwIfNoEntry: false })?.size;
  if (!size) throw new DemoError(`No video file at ${file}`);
  const slot = (await call(opts, "POST", "/videos/upload-url/", { filename: basename(file), size_bytes: size })) as { upload_url: string; source_url: string };
  console.log(`Uploading ${basename(file)} (${(size / 1024).toFixed(0)} KiB)…`);
  let put: Response;
  try {
    put = await fetch(slot.upload_url, { method: "PUT", body: Bun.file(file) });
  } catch (err) {
    // The upload URL is built from the service's BASE_URL: unreachable when BASE_URL names another host.
    throw new DemoError(`Cannot PUT to the upload URL (${(err as Error).message}). Is the service's BASE_URL reachable from here?`);
  }
  if (!put.ok) throw new DemoError(`The upload was refused: HTTP ${put.status} ${await put.text()}`);
  return slot.source_url;
}

type Video = Record<string, unknown> & { id: string; status: string; progress?: number; url?: string | null };

async function waitForTranscode(opts: Options, videoId: string): Promise<{ video: Video; renditions: Record<string, unknown>[]; error: { code: string; message: string } | null }> {
  let shown = "";
  for (;;) {
    const data = (await call(opts, "GET", `/videos/${videoId}/`)) as { video: Video; renditions: Record<string, unknown>[]; error: { code: string; message: string } | null };
    const line = data.video.status === "TRANSCODING" ? `Transcoding… ${data.video.progress ?? 0}%` : data.video.status;
    if (line !== shown) console.log(line);
    shown = line;
    if (data.video.status !== "TRANSCODING") return data;
    await Bun.sleep(POLL_MS);
  }
}

async function main(): Promise<number> {
  const opts = parseOptions(process.argv.slice(2), process.env);
  if (!opts) {
    console.log(HELP);
    return 0;
  }
  const org = (await call(opts, "GET", "/organization/")) as { organization?: { name?: string } };
  console.log(`Service ${opts.apiUrl}, organization "${org.organization?.name ?? "?"}"`);
  const sourceUrl = await upload(opts, opts.file);
  const created = (await call(opts, "POST", "/videos/", { source_url: sourceUrl, title: opts.title })) as { video: Video };
  console.log(`Registered video ${created.video.id} (VIDEO_UPLOADED)`);
  const { video, renditions, error } = await waitForTranscode(opts, created.video.id);
  if (video.status !== "COMPLETED") throw new DemoError(`The transcode failed: ${error?.code ?? video.status}: ${error?.message ?? ""}`);
  console.log(`\nVIDEO_TRANSCODING_COMPLETED: ${video.id} "${video.title}", ${video.duration_seconds} s`);
  console.log(`  HLS (any HLS player):   ${video.url}`);
  // watch_url / thumbnail_url exist once the service has the watch page (issue 16 item 6).
  if (video.watch_url) console.log(`  Watch in a browser:     ${video.watch_url}`);
  if (video.thumbnail_url) console.log(`  Thumbnail:              ${video.thumbnail_url}`);
  for (const r of renditions) {
    console.log(`  ${String(r.quality).padEnd(6)} HLS ${r.url}${r.download_url ? `\n         download ${r.download_url}${r.download_password ? ` (password ${r.download_password})` : ""}` : ""}`);
  }
  console.log(`\nThe whole video: curl -s ${opts.apiUrl}/api/public/v1/videos/${video.id}/ -H "Authorization: Bearer $VIDLIVE_API_KEY"`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    if (err instanceof DemoError) {
      console.error(err.message);
      process.exit(1);
    }
    throw err;
  },
);
