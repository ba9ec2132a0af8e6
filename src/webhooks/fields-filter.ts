/**
 * An endpoint's `fields` (spec 2.3): dot-paths to keep in `data`. Applied once,
 * when a delivery is built, so every retry sends the same trimmed bytes.
 *
 * - `video.id` keeps only `id` inside `video`; several paths merge.
 * - A path that names an object keeps it whole (`video` beats `video.id`).
 * - Arrays are walked element by element (`renditions.quality`).
 * - A path ending early on a null or a scalar keeps that value as is; a path to
 *   nothing keeps nothing.
 */
export const FIELD_PATH = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

interface PathTree {
  [key: string]: PathTree | true;
}

function buildTree(paths: readonly string[]): PathTree {
  const root: PathTree = {};
  for (const path of paths) {
    const parts = path.split(".");
    let node = root;
    for (let i = 0; i < parts.length; i++) {
      const key = parts[i]!;
      const existing = node[key];
      if (existing === true) break; // an ancestor is kept whole already
      if (i === parts.length - 1) {
        node[key] = true;
        break;
      }
      node = existing ?? (node[key] = {});
    }
  }
  return root;
}

function pick(value: unknown, tree: PathTree): unknown {
  if (Array.isArray(value)) return value.map((v) => pick(v, tree));
  if (value === null || typeof value !== "object") return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  for (const [key, sub] of Object.entries(tree)) {
    if (!Object.hasOwn(source, key)) continue;
    out[key] = sub === true ? source[key] : pick(source[key], sub);
  }
  return out;
}

/** Returns `data` reduced to `paths`; an empty list keeps everything. */
export function filterFields<T extends Record<string, unknown>>(data: T, paths: readonly string[]): Record<string, unknown> {
  if (paths.length === 0) return data;
  return pick(data, buildTree(paths)) as Record<string, unknown>;
}
