/**
 * One `wrk` run (Debian's wrk: an independent C load generator, one thread,
 * N connections), its summary read back as JSON from a small Lua `done`
 * hook: requests, req/s, non-2xx/3xx count, socket errors, p50 and p99.
 */
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export interface WrkResult {
  requests: number;
  rps: number;
  /** Responses with a status >= 400 (wrk's `errors.status`): every request of a 404 route. */
  non2xx: number;
  socketErrors: number;
  p50Ms: number;
  p99Ms: number;
}

export interface WrkTarget {
  url: string;
  method?: "GET" | "POST";
  headers?: Record<string, string>;
  body?: string;
  /** Bodies sent in turn, one a request (wrk's Lua `request` hook), in place of `body`. */
  bodies?: string[];
}

/** Separates `bodies` in the file the Lua script reads. */
const BODY_SEPARATOR = "\n--wrk-body--\n";

/** Exits with the install hint when wrk is missing: both sides of every bench are loaded by it. */
export function requireWrk(): string {
  const bin = Bun.which("wrk");
  if (!bin) {
    console.error("wrk is not installed: apt-get install -y wrk");
    process.exit(1);
  }
  return bin;
}

const SCRIPT = `
local cfg = os.getenv("WRK_TARGET_FILE")
local f = io.open(cfg, "r")
local method = f:read("*l")
local nheaders = tonumber(f:read("*l"))
for i = 1, nheaders do
  local name = f:read("*l")
  local value = f:read("*l")
  wrk.headers[name] = value
end
local body = f:read("*a")
f:close()
wrk.method = method
local bodies = {}
local from = 1
while body ~= nil do
  local i, j = string.find(body, "${BODY_SEPARATOR.replaceAll("\n", "\\n")}", from, true)
  if not i then table.insert(bodies, string.sub(body, from)); break end
  table.insert(bodies, string.sub(body, from, i - 1))
  from = j + 1
end
if #bodies == 1 and bodies[1] ~= "" then wrk.body = bodies[1] end
if #bodies > 1 then
  local n = 0
  request = function()
    n = n % #bodies + 1
    return wrk.format(nil, nil, nil, bodies[n])
  end
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format('WRK_JSON {"requests":%d,"duration_us":%d,"status":%d,"socket":%d,"p50_us":%d,"p99_us":%d}\\n',
    summary.requests, summary.duration, e.status, e.connect + e.read + e.write + e.timeout,
    latency:percentile(50), latency:percentile(99)))
end
`;

let scriptPath: string | undefined;
let seq = 0;

export async function wrk(target: WrkTarget, opts: { seconds: number; connections: number }): Promise<WrkResult> {
  const bin = requireWrk();
  scriptPath ??= join(tmpdir(), `bench-wrk-${process.pid}.lua`);
  writeFileSync(scriptPath, SCRIPT);
  const headers = Object.entries(target.headers ?? {});
  const cfg = join(tmpdir(), `bench-wrk-${process.pid}-${seq++}.txt`);
  writeFileSync(cfg, [target.method ?? "GET", String(headers.length), ...headers.flatMap(([k, v]) => [k, v]), target.bodies ? target.bodies.join(BODY_SEPARATOR) : (target.body ?? "")].join("\n"));
  const proc = Bun.spawn([bin, "-t1", `-c${opts.connections}`, `-d${opts.seconds}s`, "--timeout", "10s", "-s", scriptPath, target.url], {
    stdout: "pipe",
    stderr: "pipe",
    env: { ...process.env, WRK_TARGET_FILE: cfg },
  });
  const out = await new Response(proc.stdout).text();
  await proc.exited;
  const line = out.split("\n").find((l) => l.startsWith("WRK_JSON "));
  if (!line) throw new Error(`wrk printed no summary: ${out}\n${await new Response(proc.stderr).text()}`);
  const r = JSON.parse(line.slice("WRK_JSON ".length)) as { requests: number; duration_us: number; status: number; socket: number; p50_us: number; p99_us: number };
  return { requests: r.requests, rps: r.requests / (r.duration_us / 1e6), non2xx: r.status, socketErrors: r.socket, p50Ms: r.p50_us / 1000, p99Ms: r.p99_us / 1000 };
}
