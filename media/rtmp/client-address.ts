/**
 * What counts as "one client" for the per-IP connection cap. An IPv4 address
 * (also in its IPv4-mapped IPv6 form, as a dual-stack listener reports it) is
 * itself; an IPv6 address counts by its /64, the smallest block a site is
 * normally given: one host can use any of its 2^64 addresses at no cost.
 */
export function clientAddressKey(address: string): string {
  let a = address.trim().toLowerCase();
  if (a.startsWith("[") && a.endsWith("]")) a = a.slice(1, -1);
  const zone = a.indexOf("%");
  if (zone >= 0) a = a.slice(0, zone);
  if (!a.includes(":")) return a;
  const groups = expandIpv6(a);
  if (!groups) return a;
  if (groups.slice(0, 5).every((g) => g === "0") && groups[5] === "ffff") {
    const hi = parseInt(groups[6]!, 16);
    const lo = parseInt(groups[7]!, 16);
    return `${hi >> 8}.${hi & 0xff}.${lo >> 8}.${lo & 0xff}`;
  }
  return `${groups.slice(0, 4).join(":")}::/64`;
}

/** Eight lower-case hex groups without leading zeros, or null if `a` is not IPv6 text. */
function expandIpv6(a: string): string[] | null {
  let text = a;
  // A trailing dotted quad (::1.2.3.4, 64:ff9b::1.2.3.4) is two groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (quad) {
    const b = quad.slice(1).map(Number);
    if (b.some((n) => n > 255)) return null;
    text = text.slice(0, quad.index) + `${((b[0]! << 8) | b[1]!).toString(16)}:${((b[2]! << 8) | b[3]!).toString(16)}`;
  }
  const halves = text.split("::");
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(":") : [];
  const tail = halves.length === 2 && halves[1] ? halves[1].split(":") : [];
  const missing = 8 - head.length - tail.length;
  if (halves.length === 1 ? missing !== 0 : missing < 1) return null;
  const groups = [...head, ...Array<string>(halves.length === 2 ? missing : 0).fill("0"), ...tail];
  if (!groups.every((g) => /^[0-9a-f]{1,4}$/.test(g))) return null;
  return groups.map((g) => parseInt(g, 16).toString(16));
}
