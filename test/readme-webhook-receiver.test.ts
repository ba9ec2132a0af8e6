import { afterAll, expect, setDefaultTimeout, test } from "bun:test";
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { signatureHeader } from "../src/webhooks/sign.ts";

setDefaultTimeout(120_000);

// The receiver of README "Receiving webhooks", run as written.
const readme = readFileSync(join(import.meta.dir, "../README.md"), "utf8");
const section = readme.slice(readme.indexOf("## Receiving webhooks"));
const code = /```ts\n([\s\S]*?)```/.exec(section.slice(0, section.indexOf("\n## ", 5)))![1]!;
// The command the README gives on the receiver's first line: `npx bun receiver.ts` (after `npm install`, bun is not on PATH).
const command = /^\/\/ receiver\.ts.*: WEBHOOK_SECRET=\S+ (.+) receiver\.ts$/m.exec(code)?.[1] ?? "";
const dir = join(import.meta.dir, "../.tmp");
const file = join(dir, `readme-receiver-${process.pid}.ts`);
mkdirSync(dir, { recursive: true });
writeFileSync(file, code);
afterAll(() => rmSync(file, { force: true }));

test("the README's webhook receiver, started with the README's command, accepts signed deliveries once and refuses bad ones", async () => {
  const probe = Bun.serve({ port: 0, fetch: () => new Response() });
  const port = probe.port;
  probe.stop(true);
  const secret = "whsec_readme";
  expect(command).toBe("npx bun");
  // A PATH without any folder holding bun: only npx's node_modules/.bin can find it, as on a fresh `npm install`.
  const path = (process.env.PATH ?? "")
    .split(":")
    .filter((d) => d && !existsSync(join(d, "bun")))
    .join(":");
  // setsid: npx and the bun it starts form one process group, stopped together.
  const child = Bun.spawn(["setsid", ...command.split(" "), file], {
    cwd: join(import.meta.dir, ".."),
    env: { ...process.env, PATH: path, WEBHOOK_SECRET: secret, PORT: String(port) },
    stdout: "pipe",
    stderr: "inherit",
  });
  try {
    const body = JSON.stringify({ event: "VIDEO_TRANSCODING_COMPLETED", created_at: new Date().toISOString(), data: { video: { id: "vid_readme" } } });
    const post = (headers: Record<string, string>, b = body) => fetch(`http://127.0.0.1:${port}/`, { method: "POST", headers: { "content-type": "application/json", ...headers }, body: b });
    let first: Response | undefined;
    for (let i = 0; i < 600 && !first; i++)
      first = await post({ "x-service-delivery": "dlv_1", "x-service-signature": signatureHeader(secret, body, Date.now() / 1000) }).catch(() => Bun.sleep(50).then(() => undefined));
    expect(first!.status).toBe(204);
    expect((await post({ "x-service-delivery": "dlv_1", "x-service-signature": signatureHeader(secret, body, Date.now() / 1000) })).status).toBe(204);
    expect((await post({ "x-service-delivery": "dlv_2", "x-service-signature": signatureHeader("whsec_other", body, Date.now() / 1000) })).status).toBe(400);
    expect((await post({ "x-service-delivery": "dlv_3", "x-service-signature": signatureHeader(secret, body, Date.now() / 1000 - 600) })).status).toBe(400);
    expect((await post({ "x-service-delivery": "dlv_4", "x-service-signature": signatureHeader(secret, body, Date.now() / 1000) }, body + " ")).status).toBe(400);
    expect((await post({ "x-service-delivery": "dlv_5" })).status).toBe(400);
  } finally {
    try {
      process.kill(-child.pid, "SIGTERM");
    } catch {}
    await child.exited;
  }
  const out = await new Response(child.stdout).text();
  expect(out.trim().split("\n")).toEqual(["VIDEO_TRANSCODING_COMPLETED vid_readme"]);
}, 120_000);
