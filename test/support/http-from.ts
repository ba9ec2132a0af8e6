/**
 * One HTTP/1.1 request sent from a chosen local address (127.0.0.2, …): what
 * the server sees as another client. fetch cannot bind its source address;
 * node:net can. Plain http only; the answer is read to the connection's end.
 */
import { createConnection } from "node:net";

export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

export function requestFrom(localAddress: string, url: string, init: { method: string; headers?: Record<string, string>; body?: string }): Promise<RawResponse> {
  const u = new URL(url);
  const body = Buffer.from(init.body ?? "");
  const head = [
    `${init.method} ${u.pathname}${u.search} HTTP/1.1`,
    `host: ${u.host}`,
    "connection: close",
    `content-length: ${body.length}`,
    ...Object.entries(init.headers ?? {}).map(([k, v]) => `${k}: ${v}`),
  ];
  return new Promise((resolve, reject) => {
    const socket = createConnection({ host: u.hostname, port: Number(u.port), localAddress });
    const chunks: Buffer[] = [];
    socket.on("connect", () => socket.write(Buffer.concat([Buffer.from(`${head.join("\r\n")}\r\n\r\n`), body])));
    socket.on("data", (b: Buffer) => chunks.push(b));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const split = text.indexOf("\r\n\r\n");
      if (split < 0) return reject(new Error(`no HTTP answer from ${url}: ${JSON.stringify(text.slice(0, 200))}`));
      const [statusLine, ...lines] = text.slice(0, split).split("\r\n");
      const headers: Record<string, string> = {};
      for (const line of lines) {
        const i = line.indexOf(":");
        headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
      }
      let rest = text.slice(split + 4);
      if (headers["transfer-encoding"] === "chunked") rest = unchunk(rest);
      resolve({ status: Number(statusLine!.split(" ")[1]), headers, body: rest });
    });
  });
}

function unchunk(text: string): string {
  let out = "";
  let i = 0;
  for (;;) {
    const eol = text.indexOf("\r\n", i);
    if (eol < 0) return out;
    const size = Number.parseInt(text.slice(i, eol), 16);
    if (!size) return out;
    out += text.slice(eol + 2, eol + 2 + size);
    i = eol + 2 + size + 2;
  }
}
