/**
 * Splits a push URL the way real encoders do, so our publisher can exercise
 * both shapes the server must accept (see publish-target.ts):
 *
 *   'ffmpeg': app = first path segment, name = the rest + query, tcUrl = rtmp://host:port/app
 *   'obs':    app = whole path + query, name = "", tcUrl = the whole URL
 *             (OBS with the complete URL in "Server" and a blank stream key)
 */
import { RtmpUrlError } from "./errors.ts";

export type PublisherUrlForm = "ffmpeg" | "obs";

export interface RtmpConnectTarget {
  hostname: string;
  port: number;
  app: string;
  /** Publishing name sent with the publish command. */
  name: string;
  tcUrl: string;
}

export const DEFAULT_RTMP_PORT = 1935;

export function parseRtmpUrl(url: string, form: PublisherUrlForm = "ffmpeg"): RtmpConnectTarget {
  const match = /^rtmp:\/\/(\[[^\]]+\]|[^/:?#]+)(?::(\d+))?(\/[^#]*)?$/i.exec(url);
  if (!match) throw new RtmpUrlError(`not an rtmp:// URL: ${url}`);
  const hostname = match[1]!.replace(/^\[|\]$/g, "");
  const port = match[2] ? Number(match[2]) : DEFAULT_RTMP_PORT;
  if (!(port > 0 && port < 65536)) throw new RtmpUrlError(`bad port in ${url}`);
  const pathAndQuery = (match[3] ?? "/").slice(1);
  const queryAt = pathAndQuery.indexOf("?");
  const path = queryAt === -1 ? pathAndQuery : pathAndQuery.slice(0, queryAt);
  const query = queryAt === -1 ? "" : pathAndQuery.slice(queryAt);
  const segments = path.split("/").filter((s) => s.length > 0);
  if (segments.length < 2) throw new RtmpUrlError(`URL needs /app/streamKey: ${url}`);
  const hostPort = `rtmp://${match[1]}:${port}`;
  if (form === "obs") {
    return { hostname, port, app: `${segments.join("/")}${query}`, name: "", tcUrl: `${hostPort}/${segments.join("/")}${query}` };
  }
  const [app, ...rest] = segments;
  return { hostname, port, app: app!, name: `${rest.join("/")}${query}`, tcUrl: `${hostPort}/${app}` };
}
