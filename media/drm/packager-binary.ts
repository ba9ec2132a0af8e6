/**
 * Where the Shaka Packager binary of npm `shaka-packager` is. The package has
 * no install script: its tarball carries one static binary per platform in
 * `bin/`, executable as unpacked. We spawn it directly because the package's
 * own wrapper (`index.js`) exits 0 even when the packager fails.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { PackagerUnavailableError } from "./errors.ts";

const NAMES: Record<string, string> = {
  "linux-x64": "packager-linux-x64",
  "linux-arm64": "packager-linux-arm64",
  "darwin-x64": "packager-osx-x64",
  "darwin-arm64": "packager-osx-arm64",
  "win32-x64": "packager-win-x64.exe",
};

let cached: string | null | undefined;

function packageDir(): string | null {
  try {
    return path.dirname(Bun.fileURLToPath(import.meta.resolve("shaka-packager/package.json")));
  } catch {
    return null;
  }
}

/** The binary's path for this platform, or null (no binary, or not executable). */
export function findPackager(platform: string = process.platform, arch: string = process.arch): string | null {
  const name = NAMES[`${platform}-${arch}`];
  const dir = packageDir();
  if (!name || !dir) return null;
  const file = path.join(dir, "bin", name);
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return file;
  } catch {
    return null;
  }
}

/** The binary for this machine (looked up once), or PackagerUnavailableError naming what is missing. */
export function packagerBinary(platform: string = process.platform, arch: string = process.arch): string {
  const own = platform === process.platform && arch === process.arch;
  if (own && cached === undefined) cached = findPackager();
  const found = own ? cached : findPackager(platform, arch);
  if (!found) throw new PackagerUnavailableError(`DRM packaging needs Shaka Packager: npm shaka-packager has no executable binary for ${platform}-${arch} (or is not installed)`);
  return found;
}

/** Whether DRM jobs can run here. */
export function hasPackager(): boolean {
  try {
    packagerBinary();
    return true;
  } catch {
    return false;
  }
}
