import { CliUsageError, type Flag } from "./command.ts";

/** `--name value`, `--flag` (true), repeated options collect into arrays; the rest are positionals. */
export function parseArgs(argv: string[]): { positionals: string[]; options: Record<string, string[]> } {
  const positionals: string[] = [];
  const options: Record<string, string[]> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      positionals.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    let name: string;
    let value: string;
    if (eq > 0) {
      name = arg.slice(2, eq);
      value = arg.slice(eq + 1);
    } else {
      name = arg.slice(2);
      const next = argv[i + 1];
      if (next !== undefined && !next.startsWith("--")) {
        value = next;
        i++;
      } else value = "true";
    }
    (options[name] ??= []).push(value);
  }
  return { positionals, options };
}

/**
 * Parses a command's flags against its spec, strictly: an unknown flag, a
 * switch given a value, a value flag without one, a repeated single flag, a
 * missing required flag or a value its check refuses is a CliUsageError
 * naming the flag. `-h` and `--help` are handled before this (main.ts).
 */
export function parseFlags(argv: string[], spec: Flag[]): { args: string[]; options: Record<string, string[]> } {
  const byName = new Map(spec.map((f) => [f.name, f]));
  const args: string[] = [];
  const options: Record<string, string[]> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--") {
      args.push(...argv.slice(i + 1));
      break;
    }
    if (!arg.startsWith("-") || arg === "-") {
      args.push(arg);
      continue;
    }
    if (!arg.startsWith("--")) throw new CliUsageError(`unknown flag ${arg}`);
    const eq = arg.indexOf("=");
    const name = eq > 0 ? arg.slice(2, eq) : arg.slice(2);
    const flag = byName.get(name);
    if (!flag) throw new CliUsageError(`unknown flag --${name}`);
    let value: string;
    if (!flag.value) {
      if (eq > 0) throw new CliUsageError(`--${name} takes no value`);
      value = "true";
    } else if (eq > 0) value = arg.slice(eq + 1);
    else {
      const next = argv[i + 1];
      if (next === undefined || next.startsWith("--")) throw new CliUsageError(`--${name} needs a value (${flag.value})`);
      value = next;
      i++;
    }
    if (flag.value && value === "") throw new CliUsageError(`--${name} needs a value (${flag.value})`);
    if (options[name] && !flag.repeat) throw new CliUsageError(`--${name} given more than once`);
    const wrong = flag.check?.(value);
    if (wrong) throw new CliUsageError(`--${name} ${wrong}`);
    (options[name] ??= []).push(value);
  }
  for (const f of spec) if (f.required && !options[f.name]) throw new CliUsageError(`--${f.name} is required`);
  return { args, options };
}
