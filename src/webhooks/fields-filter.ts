/**
 * An endpoint's `fields` (spec 2.3): dot-paths to keep in `data`. Applied once,
 * when a delivery is built, so every retry sends the same trimmed bytes.
 *
 * - `video.id` keeps only `id` inside `video`; several paths merge.
 * - A path that names an object keeps it whole (`video` beats `video.id`).
 * - Arrays are walked element by element (`renditions.quality`).
 * - A path ending early on a null or a scalar keeps that value as is; a path to
 *   nothing keeps nothing.
 *
 * The paths come from clients, so nothing here assigns through one of their
 * keys onto an ordinary object: the path tree is a Map, the output objects
 * have no prototype, and a key is read only when it is the source's own
 * property. A stored `__proto__.x` or `constructor.prototype.x` (refused at
 * registration, see FORBIDDEN_SEGMENTS) therefore selects nothing and can
 * never reach `Object.prototype`.
 */
export const FIELD_PATH = /^[A-Za-z0-9_]+(\.[A-Za-z0-9_]+)*$/;

/** Segments refused in a path: the names that lead from any object to a shared prototype. */
export const FORBIDDEN_SEGMENTS: ReadonlySet<string> = new Set(["__proto__", "constructor", "prototype"]);

/** True when some segment of the dot-path is `__proto__`, `constructor` or `prototype`. */
export function hasForbiddenSegment(path: string): boolean {
  return path.split(".").some((part) => FORBIDDEN_SEGMENTS.has(part));
}

/** `true`: keep the value whole; a tree: keep only these keys inside it. */
type PathTree = Map<string, PathTree | true>;

function buildTree(paths: readonly string[]): PathTree {
  const root: PathTree = new Map();
  for (const path of paths) {
    const parts = path.split(".");
    let node = root;
    for (let i = 0; i < parts.length; i++) {
      const key = parts[i]!;
      const existing = node.get(key);
      if (existing === true) break; // an ancestor is kept whole already
      if (i === parts.length - 1) {
        node.set(key, true);
        break;
      }
      let next = existing;
      if (!next) node.set(key, (next = new Map()));
      node = next;
    }
  }
  return root;
}

function pick(value: unknown, tree: PathTree): unknown {
  if (Array.isArray(value)) return value.map((v) => pick(v, tree));
  if (value === null || typeof value !== "object") return value;
  const source = value as Record<string, unknown>;
  const out = Object.create(null) as Record<string, unknown>;
  for (const [key, sub] of tree) {
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
