import { afterAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync, rmSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, relative } from "node:path";
import { counterRuntime } from "../../test/support/counter-actor.ts";
import { createDatabase } from "../db/create-database.ts";

/**
 * Issue 25 item 3, checked the way the issue states it (grep): the actor
 * runtime has no back doors. What a module may not name is looked for in the
 * source text of every file that is not the owner.
 */
const ROOT = join(import.meta.dir, "..", "..");

function filesUnder(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) out.push(...filesUnder(path));
    else if (e.name.endsWith(".ts")) out.push(path);
  }
  return out;
}

/** `file:line` of each line of `files` matching `pattern`. */
function hits(files: string[], pattern: RegExp): string[] {
  const out: string[] = [];
  for (const f of files) {
    readFileSync(join(ROOT, f), "utf8")
      .split("\n")
      .forEach((line, i) => {
        if (pattern.test(line)) out.push(`${relative(ROOT, join(ROOT, f))}:${i + 1}`);
      });
  }
  return out;
}

const src = filesUnder("src").filter((f) => !f.startsWith("src/db/migrations/") && !f.startsWith("src/db/schema/"));
const support = filesUnder("test/support");

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the actor runtime has no back doors", () => {
  test("the runtime offers no database; nothing reaches one through it", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rt-doors-"));
    dirs.push(dir);
    const database = await createDatabase({ url: `file:${join(dir, "t.db")}` });
    try {
      const { runtime } = counterRuntime(database, "doors");
      expect(Object.keys(runtime)).not.toContain("database");
      expect((runtime as Record<string, unknown>).database).toBeUndefined();
    } finally {
      database.close();
    }
    expect(hits([...src, ...support], /\b(runtime|actors)\.database\b/)).toEqual([]);
  });

  test("only src/outbox names the outbox table (its columns); the others call append, readAfter, markFannedOut, prune", () => {
    const others = [...src, ...support].filter((f) => !f.startsWith("src/outbox/"));
    // The drizzle table imported from the schema, or raw SQL on it.
    expect(hits(others, /import\s*\{[^}]*\boutbox\b[^}]*\}\s*from\s*"[./]*(src\/)?db\/schema/)).toEqual([]);
    expect(hits(others, /\b(FROM|INTO|UPDATE|JOIN)\s+outbox\b/i)).toEqual([]);
  });

  test("the settings screen has no SQL on actor tables and no actor schema", () => {
    const settings = src.filter((f) => f.startsWith("src/settings/"));
    expect(hits(settings, /\b(FROM|INTO|UPDATE|JOIN)\s+(actors|actor_tags)\b/i)).toEqual([]);
    expect(hits(settings, /\b(actors|actorTags)\b.*from\s*"\.\.\/db\/schema/)).toEqual([]);
  });

  test("the sealing code names no kind and no field: each kind declares its secret fields", () => {
    const sealing = ["src/actors/context-secrets.ts", "src/actors/actor-runtime.ts"];
    expect(hits(sealing, /streamKey|stream_key|download_password|"livestream"|"video"/)).toEqual([]);
  });
});
