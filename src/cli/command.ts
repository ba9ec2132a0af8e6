import type { Config } from "../config.ts";
import type { Database } from "../db/create-database.ts";
import type { OrgStore } from "../orgs/org-store.ts";

/**
 * The command line is malformed: an unknown command or flag, a missing
 * required flag, a value that is not of the flag's kind. One line on stderr
 * naming the flag, exit 2 (as getopt tools do); the command never ran.
 */
export class CliUsageError extends Error {
  override name = "CliUsageError";
  readonly code = "VALIDATION_ERROR";
}

/** A flag a command accepts. Without `value` it is a switch (`--json`); `repeat` collects every occurrence. */
export interface Flag {
  name: string;
  /** Placeholder shown in the usage (`ID`, `URL`); absent for a switch. */
  value?: string;
  required?: boolean;
  repeat?: boolean;
  help: string;
  /** Checks one value; returns what is wrong (printed as `--name: …`), or undefined. */
  check?: (value: string) => string | undefined;
}

/** What a command's `run` gets: its parsed flags and, opened on first use, the service's database. */
export interface CliContext {
  /** Flag name → values (last wins for single flags; see `one`/`opt`). */
  options: Record<string, string[]>;
  /** Extra words after the command name (`trigger EVENT`). */
  args: string[];
  json: boolean;
  /** Opens the database named by DATA_DIR / DATABASE_URL; refuses one that does not exist yet. */
  database(): Promise<{ database: Database; orgs: OrgStore; config: Config }>;
  /** Environment, for defaults (`VIDLIVE_API_URL`). */
  env: Record<string, string | undefined>;
}

export interface Command {
  /** `noun verb`, or a single word (`listen`). */
  name: string;
  summary: string;
  flags: Flag[];
  /** Positional words after the name, e.g. `EVENT`; none when absent. */
  args?: { name: string; required: boolean }[];
  /** Extra lines printed under the flags in `--help`. */
  notes?: string;
  run(ctx: CliContext): Promise<number>;
}

/** A required flag's value. */
export function one(ctx: CliContext, name: string): string {
  const v = ctx.options[name]?.at(-1);
  if (v === undefined) throw new CliUsageError(`--${name} is required`);
  return v;
}

/** An optional flag's value. */
export function opt(ctx: CliContext, name: string): string | undefined {
  return ctx.options[name]?.at(-1);
}

/** `on|off`-style enum checks for flag specs. */
export const oneOf =
  (...allowed: string[]) =>
  (v: string) =>
    allowed.includes(v) ? undefined : `takes ${allowed.join(" or ")}, got "${v}"`;
