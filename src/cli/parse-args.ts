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
