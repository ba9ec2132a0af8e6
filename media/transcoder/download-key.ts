/** A fresh 128-bit value as 32 lowercase hex digits, from the OS CSPRNG. */
export function randomKeyHex(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}
