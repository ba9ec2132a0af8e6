/**
 * Works out which stream a publisher means. Encoders split one push URL
 * `rtmp://host/live/KEY?sig=X` differently:
 *
 *   ffmpeg:                 app "live",           name "KEY?sig=X", tcUrl rtmp://host:1935/live
 *   OBS, URL in "Server",   app "live/KEY?sig=X", name "",          tcUrl rtmp://host/live/KEY?sig=X
 *   blank stream key
 *
 * and some put the query only on tcUrl. All forms must reach authorization as
 * the same (app, streamKey, query), otherwise a signature check would pass for
 * one encoder and fail for another.
 */

export interface PublishTarget {
  /** Application path without the stream key, e.g. "live". */
  app: string;
  /** Last path segment of the combined path; "" when there is none. */
  streamKey: string;
  /**
   * Parameters from the publishing name, then app, then tcUrl. A key present
   * in an earlier source hides the same key in later ones, so a query repeated
   * in app and tcUrl (OBS) is not doubled.
   */
  query: URLSearchParams;
}

export interface PublishTargetInput {
  /** `app` of the connect command's command object. */
  app: string;
  /** Publishing name, the first argument of `publish`. */
  name: string;
  /** `tcUrl` of the connect command, if sent. */
  tcUrl?: string;
}

export function resolvePublishTarget(input: PublishTargetInput): PublishTarget {
  const [appPath, appQuery] = splitQuery(input.app);
  const [namePath, nameQuery] = splitQuery(input.name);
  const [tcPath, tcQuery] = splitQuery(stripSchemeAndHost(input.tcUrl ?? ""));
  const appSegments = segments(appPath);
  const nameSegments = segments(namePath);
  const tcSegments = segments(tcPath);

  let all: string[];
  if (nameSegments.length > 0) {
    all = [...appSegments, ...nameSegments];
  } else if (appSegments.length >= 2) {
    all = appSegments;
  } else if (tcSegments.length >= 2 && startsWith(tcSegments, appSegments)) {
    // App alone ("live") but tcUrl carries the complete path.
    all = tcSegments;
  } else {
    all = [...appSegments, ""];
  }
  const streamKey = all[all.length - 1] ?? "";
  const app = all.slice(0, -1).join("/");
  return { app, streamKey, query: mergeQueries([nameQuery, appQuery, tcQuery]) };
}

function splitQuery(value: string): [path: string, query: string] {
  const i = value.indexOf("?");
  return i === -1 ? [value, ""] : [value.slice(0, i), value.slice(i + 1)];
}

/** "rtmp://host:1935/live/KEY?x" → "/live/KEY?x"; anything unparseable → "". */
function stripSchemeAndHost(url: string): string {
  const match = /^[a-z][a-z0-9+.-]*:\/\/[^/?#]*/i.exec(url);
  return match ? url.slice(match[0].length) : "";
}

function segments(path: string): string[] {
  return path.split("/").filter((s) => s.length > 0);
}

function startsWith(all: string[], prefix: string[]): boolean {
  return prefix.every((s, i) => all[i] === s);
}

function mergeQueries(sources: string[]): URLSearchParams {
  const merged = new URLSearchParams();
  const seen = new Set<string>();
  for (const source of sources) {
    if (!source) continue;
    const params = new URLSearchParams(source);
    const keysHere = new Set<string>();
    for (const [key, value] of params) {
      if (seen.has(key)) continue;
      merged.append(key, value);
      keysHere.add(key);
    }
    for (const key of keysHere) seen.add(key);
  }
  return merged;
}
