import { existsSync } from "node:fs";
import { ConfigError, loadConfig } from "../config.ts";
import { operatorBaseUrl } from "../service-address.ts";
import { createDatabase, type Database } from "../db/create-database.ts";
import { DomainError } from "../errors.ts";
import { createOrgStore } from "../orgs/org-store.ts";
import { CliUsageError, type CliContext, type Command } from "./command.ts";
import { COMMANDS } from "./commands/index.ts";
import { parseFlags } from "./parse-args.ts";
import { commandUsage, overview } from "./usage.ts";

const TITLE = "Operator CLI (org/key commands talk to the same database as the server, safe while it runs; listen/trigger talk to its API)";

/** The command named by the first one or two words, and the words after it. */
function resolve(argv: string[]): { command?: Command; rest: string[]; group?: Command[] } {
  const words = argv.slice(0, 2).filter((w) => !w.startsWith("-"));
  const two = words.length === 2 ? COMMANDS.find((c) => c.name === `${words[0]} ${words[1]}`) : undefined;
  if (two) return { command: two, rest: argv.slice(2) };
  const single = COMMANDS.find((c) => c.name === words[0]);
  if (single) return { command: single, rest: argv.slice(1) };
  const group = COMMANDS.filter((c) => c.name.startsWith(`${words[0]} `));
  return { rest: argv, group: group.length ? group : undefined };
}

/** `file:` URL → path on disk; undefined for a server (libsql://, http://) or an in-memory database. */
function filePath(url: string): string | undefined {
  if (!url.startsWith("file:")) return undefined;
  const path = url.slice("file:".length).split("?")[0]!;
  return path === ":memory:" ? undefined : path;
}

async function run(argv: string[]): Promise<number> {
  const help = argv.some((a) => a === "--help" || a === "-h");
  const { command, rest, group } = resolve(argv);
  if (!command) {
    if (argv.length === 0 || (help && argv[0]?.startsWith("-"))) {
      console.log(overview(COMMANDS, TITLE));
      return argv.length === 0 ? 2 : 0;
    }
    if (group && (help || argv.length === 1)) {
      // `org --help` lists the group; a bare `org` is a usage error that shows the same list.
      (help ? console.log : console.error)(overview(group, `Commands of "${argv[0]}":`));
      return help ? 0 : 2;
    }
    const named = argv
      .filter((a) => !a.startsWith("-"))
      .slice(0, group ? 2 : 1)
      .join(" ");
    console.error(`unknown command "${named}" (npm run cli -- --help lists them)`);
    return 2;
  }
  if (help) {
    console.log(commandUsage(command));
    return 0;
  }
  const { args, options } = parseFlags(rest, command.flags);
  const want = command.args ?? [];
  if (args.length > want.length) throw new CliUsageError(`unexpected argument "${args[want.length]}" (${command.name} --help)`);
  const missing = want.find((a, i) => a.required && args[i] === undefined);
  if (missing) throw new CliUsageError(`${command.name} needs ${missing.name} (${command.name} --help)`);

  let opened: Database | undefined;
  const ctx: CliContext = {
    options,
    args,
    json: options.json !== undefined,
    env: process.env,
    async database() {
      const loaded = loadConfig();
      // Links the CLI prints (setup links) name the running service's address, not a default its terminal cannot know; frozen as the service's is.
      const config = Object.freeze({ ...loaded, baseUrl: operatorBaseUrl(loaded, process.env) });
      // A typo in DATA_DIR must not create a second, empty service database beside the real one.
      const path = filePath(config.databaseUrl);
      if (path !== undefined && !existsSync(path)) throw new ConfigError(`no database at ${path}; start the server once or set DATA_DIR`);
      opened ??= await createDatabase({ url: config.databaseUrl, authToken: config.databaseAuthToken });
      return { database: opened, orgs: createOrgStore(opened), config };
    },
  };
  try {
    return await command.run(ctx);
  } finally {
    await opened?.close();
  }
}

/** Exit codes: 0 done, 1 refused (a domain error: NOT_FOUND, API_KEY_EXISTS…), 2 bad command line or configuration. */
async function main(argv: string[]): Promise<number> {
  try {
    return await run(argv);
  } catch (err) {
    if (err instanceof CliUsageError) console.error(`${err.message}`);
    else if (err instanceof ConfigError) console.error(`configuration: ${err.message}`);
    else if (err instanceof DomainError) {
      console.error(`${err.code}: ${err.message}`);
      return 1;
    } else {
      console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      return 1;
    }
    return 2;
  }
}

process.exit(await main(process.argv.slice(2)));
