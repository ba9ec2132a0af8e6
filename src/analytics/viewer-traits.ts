import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type CountryResponse, Reader } from "maxmind";
import { UAParser } from "ua-parser-js";

const require = createRequire(import.meta.url);

/** What a view keeps of its viewer: never the address or the user agent themselves. */
export interface ViewerTraits {
  country: string;
  browser: string;
  os: string;
  deviceType: string;
}

const UNKNOWN = "unknown";
/** Parsed user agents remembered (most viewers share a handful of them). */
const UA_CACHE = 2_000;
/** Client addresses whose country is remembered. */
const ADDRESSES_CACHED = 10_000;
/** Decoded geo records remembered. */
const RECORDS_CACHED = 10_000;

/**
 * Country from the client address through the country database shipped in
 * `@ip-location-db/geo-whois-asn-country-mmdb` (read once from node_modules,
 * nothing downloaded), browser/OS/device type from `ua-parser-js`. A
 * desktop browser has no device type in ua-parser: `desktop`.
 */
export function createViewerTraits() {
  // Decoded records kept by offset (a country database has a few hundred): without it every lookup decodes its record
  // again, which cost as much as parsing a whole beacon body (bench/beacons-cpu.ts).
  const records = new Map<number, unknown>();
  const cache = {
    get: (offset: number) => records.get(offset),
    set: (offset: number, record: unknown) => {
      if (records.size >= RECORDS_CACHED) records.clear();
      records.set(offset, record);
    },
  };
  const reader = new Reader<CountryResponse>(readFileSync(require.resolve("@ip-location-db/geo-whois-asn-country-mmdb/geo-whois-asn-country.mmdb")), { cache });
  const agents = new Map<string, Omit<ViewerTraits, "country">>();

  // Countries by address (a viewer sends a beacon every few seconds from the same one): the tree walk to the record
  // (up to 128 node reads) once per address, not per beacon. Bounded like the user agents.
  const countries = new Map<string, string>();
  function country(address: string): string {
    const known = countries.get(address);
    if (known !== undefined) return known;
    let found: string;
    try {
      found = (reader.get(address) as { country_code?: string } | null)?.country_code ?? UNKNOWN;
    } catch {
      found = UNKNOWN; // not an IP address (a socket without one)
    }
    if (countries.size >= ADDRESSES_CACHED) countries.clear();
    countries.set(address, found);
    return found;
  }

  function agent(ua: string): Omit<ViewerTraits, "country"> {
    const hit = agents.get(ua);
    if (hit) return hit;
    const r = new UAParser(ua).getResult();
    const traits = { browser: (r.browser.name ?? UNKNOWN).slice(0, 40), os: (r.os.name ?? UNKNOWN).slice(0, 40), deviceType: (r.device.type ?? (ua ? "desktop" : UNKNOWN)).slice(0, 20) };
    if (agents.size >= UA_CACHE) agents.clear();
    agents.set(ua, traits);
    return traits;
  }

  return {
    of(address: string, userAgent: string): ViewerTraits {
      return { country: country(address), ...agent(userAgent.slice(0, 512)) };
    },
  };
}

export type ViewerTraitsSource = ReturnType<typeof createViewerTraits>;
