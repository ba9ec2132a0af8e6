import { afterAll, expect, test } from "bun:test";
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
  for (const ip of ["::1", "::", "[::1]", "fc00::1", "fd12:3456::1", "fe80::1", "fe80::1%eth0", "ff02::1", "::ffff:127.0.0.1", "::ffff:7f00:1", "::ffff:10.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::1", "2001:db8::1"]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, true]);
  }
  for (const ip of ["2606:4700:4700::1111", "2a00:1450:4001:80b::200e", "::ffff:8.8.8.8"]) {
    expect([ip, isPrivateAddress(ip)]).toEqual([ip, false]);
  }
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
