import { expect, test } from "bun:test";
import { clientAddressKey } from "./client-address.ts";

test("IPv4 is itself, also in IPv4-mapped IPv6 form (dual-stack listeners)", () => {
  expect(clientAddressKey("203.0.113.7")).toBe("203.0.113.7");
  expect(clientAddressKey("::ffff:203.0.113.7")).toBe("203.0.113.7");
  expect(clientAddressKey("::FFFF:cb00:7107")).toBe("203.0.113.7");
  expect(clientAddressKey("0:0:0:0:0:ffff:203.0.113.7")).toBe("203.0.113.7");
});

test("IPv6 counts by its /64: one host cannot rotate through its own block", () => {
  const key = clientAddressKey("2001:db8:1:2::1");
  expect(key).toBe("2001:db8:1:2::/64");
  expect(clientAddressKey("2001:0db8:0001:0002:ffff:1234:5678:9abc")).toBe(key);
  expect(clientAddressKey("[2001:db8:1:2::42%eth0]")).toBe(key);
  expect(clientAddressKey("2001:db8:1:3::1")).not.toBe(key);
  expect(clientAddressKey("::1")).toBe("0:0:0:0::/64");
});

test("anything unparsable is its own key (never merged with others, never throws)", () => {
  for (const junk of ["", "x", ":::", "1:2:3:4:5:6:7:8:9", "::gggg", "1.2.3.999"]) expect(typeof clientAddressKey(junk)).toBe("string");
  expect(clientAddressKey(":::")).toBe(":::");
});
