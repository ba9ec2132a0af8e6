/**
 * The house's import rules (issue 25), checked on every run so a new wing cannot tie a knot again: no import
 * circles (type imports included), `machines/` imports nothing from `src/`, `media/` never imports `src/`, and
 * the work ledger (`src/work/`) imports nothing from `src/actors/` or `src/videos/`. The graph is madge's.
 */
import { expect, setDefaultTimeout, test } from "bun:test";
import { createRequire } from "node:module";
import { join } from "node:path";

/** The part of madge's API used here (madge ships no types). */
interface MadgeGraph {
  circular(): string[][];
  obj(): Record<string, string[]>;
}
type Madge = (paths: string[], config: Record<string, unknown>) => Promise<MadgeGraph>;
const madge = createRequire(import.meta.url)("madge") as Madge;

setDefaultTimeout(120_000);

const root = join(import.meta.dir, "..");
const graph = madge(["src", "media", "machines"], { baseDir: root, fileExtensions: ["ts"], detectiveOptions: { ts: { skipTypeImports: false } } });

test("no import circles in src/, media/ and machines/", async () => {
  expect((await graph).circular()).toEqual([]);
});

test("machines/ and media/ import nothing from src/; src/work/ nothing from src/actors/ or src/videos/", async () => {
  const edges = Object.entries((await graph).obj()).flatMap(([from, tos]) => tos.map((to) => `${from} -> ${to}`));
  const broken = edges.filter((e) => {
    const [from, to] = e.split(" -> ") as [string, string];
    if ((from.startsWith("machines/") || from.startsWith("media/")) && to.startsWith("src/")) return true;
    return from.startsWith("src/work/") && (to.startsWith("src/actors/") || to.startsWith("src/videos/"));
  });
  expect(broken).toEqual([]);
  // The graph is the real one: it holds the edges it checks.
  expect(edges.some((e) => e.startsWith("src/service.ts -> src/"))).toBe(true);
});
