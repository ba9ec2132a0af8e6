import { afterAll, describe, expect, test } from "bun:test";
import { assertPublicUrl, createOutboundGuard, isPrivateAddress, OutboundRefusedError } from "./outbound-guard.ts";

test("private, loopback, link-local and reserved IPv4 addresses are refused", () => {
  for (const ip of ["127.0.0.1", "127.255.0.9", "10.1.2.3", "172.16.0.1", "172.31.255.255", "192.168.1.1", "169.254.169.254", "0.0.0.0", "100.64.0.1", "224.0.0.1", "255.255.255.255", "198.18.0.1"]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
  }
  for (const ip of ["8.8.8.8", "1.1.1.1", "172.15.255.255", "172.32.0.1", "192.169.0.1", "100.128.0.1", "93.184.216.34"]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
  }
});

test("IPv6: loopback, unspecified, ULA, link-local, multicast and mapped private IPv4 are refused", () => {
  for (const ip of [
    "::1",
    "::",
    "[::1]",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "ff02::1",
    "::ffff:127.0.0.1",
    "::ffff:7f00:1",
    "::ffff:10.0.0.1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::1",
    "2001:db8::1",
  ]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
  }
  for (const ip of ["2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
  }
});

/** Each IPv6 form that embeds an IPv4 address, written with the IPv4 part in hex and in dotted form. */
function forms(v4: string) {
  const [a, b, c, d] = v4.split(".").map(Number) as [number, number, number, number];
  const hi = ((a << 8) | b).toString(16);
  const lo = ((c << 8) | d).toString(16);
  return {
    mapped: [`::ffff:${v4}`, `::ffff:${hi}:${lo}`, `0:0:0:0:0:ffff:${hi}:${lo}`],
    translated: [`::ffff:0:${v4}`, `::ffff:0:${hi}:${lo}`, `0:0:0:0:ffff:0:${hi}:${lo}`],
    compatible: [`::${v4}`, `::${hi}:${lo}`],
    nat64: [`64:ff9b::${v4}`, `64:ff9b::${hi}:${lo}`, `64:ff9b:0:0:0:0:${hi}:${lo}`],
    nat64Local: [`64:ff9b:1::${v4}`, `64:ff9b:1:${hi}:${lo}::`, `64:ff9b:1::${hi}:${lo}`],
    sixToFour: [`2002:${hi}:${lo}::1`, `2002:${hi}:${lo}:0:0:0:0:1`, `2002:${hi}:${lo}::${v4}`],
    // Teredo: server IPv4 in groups 2-3, the client's IPv4 obfuscated (xor 0xffff) in groups 6-7.
    teredo: [`2001:0:${hi}:${lo}::1`, `2001::${(0xffff ^ parseInt(hi, 16)).toString(16)}:${(0xffff ^ parseInt(lo, 16)).toString(16)}`, `2001:0:4136:e378:8000:63bf:3fff:fdd2`],
  };
}

const PRIVATE_V4 = ["127.0.0.1", "10.0.0.1", "192.168.1.1", "169.254.169.254", "172.16.5.4", "100.64.0.1", "0.0.0.0"];
const PUBLIC_V4 = ["8.8.8.8", "93.184.216.34", "1.1.1.1"];

describe("IPv6 forms that embed an IPv4 address", () => {
  for (const kind of ["mapped", "translated", "compatible", "nat64"] as const) {
    test(`${kind}: refused when the IPv4 address is private, allowed when it is public, in hex and dotted forms`, () => {
      for (const v4 of PRIVATE_V4) for (const ip of forms(v4)[kind]) expect([ip, isPrivateAddress(ip), isPrivateAddress(`[${ip}]`)]).toEqual([ip, true, true]);
      for (const v4 of PUBLIC_V4) for (const ip of forms(v4)[kind]) expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
    });
  }

  for (const kind of ["nat64Local", "sixToFour", "teredo"] as const) {
    test(`${kind}: the whole prefix is refused, whatever IPv4 address it carries`, () => {
      for (const v4 of [...PRIVATE_V4, ...PUBLIC_V4]) for (const ip of forms(v4)[kind]) expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
    });
  }

  test("the URL forms the guard sees (hostnames come normalised to hex) are refused before any request", async () => {
    const lookup = async () => ["93.184.216.34"];
    for (const host of [
      "[::ffff:0:127.0.0.1]",
      "[::127.0.0.1]",
      "[::ffff:0:a9fe:a9fe]",
      "[64:ff9b::10.0.0.1]",
      "[64:ff9b:1::a00:1]",
      "[2002:c0a8:101::1]",
      "[2001:0:4136:e378:8000:63bf:3fff:fdd2]",
      "[::a00:1]",
    ]) {
      await expect(assertPublicUrl(`https://${host}/hook`, { allowPrivate: false, lookup })).rejects.toBeInstanceOf(OutboundRefusedError);
    }
    await assertPublicUrl("https://[::ffff:0:8.8.8.8]/hook", { allowPrivate: false, lookup });
    await assertPublicUrl("https://[64:ff9b::8.8.8.8]/hook", { allowPrivate: false, lookup });
    // A name whose AAAA answer is one of these forms is refused the same way.
    const aaaa = async (host: string) =>
      ({ "translated.example": ["::ffff:0:a00:1"], "nat64.example": ["64:ff9b::a9fe:a9fe"], "teredo.example": ["2001:0:4136:e378:8000:63bf:3fff:fdd2"] })[host] ?? [];
    for (const host of ["translated.example", "nat64.example", "teredo.example"]) {
      await expect(assertPublicUrl(`https://${host}/`, { allowPrivate: false, lookup: aaaa })).rejects.toThrow("non-public");
    }
  });

  test("outside global unicast, and the special ranges inside it, are refused; ordinary global unicast is not", () => {
    for (const ip of ["::5", "::1:0:0:0", "100::1", "64:ff9b:2::1", "2001:2::1", "2001:10::1", "2001:20::1", "3fff::1", "4000::1", "fc00::1", "fe80::1", "ff02::1"]) {
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
    }
    for (const ip of ["2001:4860:4860::8888", "2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "2001:1::1", "2001:30::1", "3fff:1000::1"]) {
      expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
    }
  });
});

test("a name is resolved and refused when any of its addresses is private", async () => {
  const lookup = async (host: string) => ({ "public.example": ["93.184.216.34"], "mixed.example": ["93.184.216.34", "10.0.0.5"], "meta.example": ["169.254.169.254"] })[host] ?? [];
  await assertPublicUrl("https://public.example/hook", { allowPrivate: false, lookup });
  await expect(assertPublicUrl("https://mixed.example/hook", { allowPrivate: false, lookup })).rejects.toBeInstanceOf(OutboundRefusedError);
  await expect(assertPublicUrl("https://meta.example/", { allowPrivate: false, lookup })).rejects.toThrow("169.254.169.254");
  await expect(assertPublicUrl("https://127.0.0.1:8443/", { allowPrivate: false, lookup })).rejects.toBeInstanceOf(OutboundRefusedError);
  await expect(assertPublicUrl("https://[::1]/", { allowPrivate: false, lookup })).rejects.toBeInstanceOf(OutboundRefusedError);
  await expect(assertPublicUrl("https://localhost/", { allowPrivate: false })).rejects.toBeInstanceOf(OutboundRefusedError);
  await expect(assertPublicUrl("file:///etc/passwd", { allowPrivate: true })).rejects.toBeInstanceOf(OutboundRefusedError);
  await assertPublicUrl("https://127.0.0.1/", { allowPrivate: true });
});

test("resolutions are cached per host for the TTL", async () => {
  let calls = 0;
  const guard = createOutboundGuard({ allowPrivate: false, ttlMs: 60_000, lookup: async () => (calls++, ["93.184.216.34"]) });
  await guard.check("https://a.example/1");
  await guard.check("https://a.example/2");
  expect(calls).toBe(1);
});

const target = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("target") });
const redirector = Bun.serve({
  port: 0,
  hostname: "127.0.0.1",
  fetch: (req) => new Response(null, { status: 302, headers: { location: new URL(req.url).pathname === "/public" ? "/final" : `http://127.0.0.1:${target.port}/` } }),
});
afterAll(() => {
  target.stop(true);
  redirector.stop(true);
});

test("guarded fetch does not follow redirects by default and checks every hop it follows", async () => {
  const open = createOutboundGuard({ allowPrivate: true });
  const res = await open.fetch(`http://127.0.0.1:${redirector.port}/x`);
  expect(res.status).toBe(302);
  expect(await (await open.fetch(`http://127.0.0.1:${redirector.port}/x`, { maxRedirects: 2 })).text()).toBe("target");
  // The first hop passes (its name is made to look public), the redirect to a loopback literal does not.
  const hops: string[] = [];
  const lookup = async (host: string) => (hops.push(host), ["93.184.216.34"]);
  const strict = createOutboundGuard({ allowPrivate: false, lookup });
  await expect(strict.fetch(`http://localhost:${redirector.port}/x`, { maxRedirects: 2 })).rejects.toThrow("127.0.0.1");
  expect(hops).toEqual(["localhost"]);
});
