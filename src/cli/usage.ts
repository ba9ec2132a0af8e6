import type { Command, Flag } from "./command.ts";

const flagWord = (f: Flag) => `--${f.name}${f.value ? ` ${f.value}` : ""}${f.repeat ? " …" : ""}`;

/** `org set --org ID [--drm on|off] …`: one command's synopsis. */
export function synopsis(c: Command): string {
  const args = (c.args ?? []).map((a) => (a.required ? a.name : `[${a.name}]`));
  const flags = c.flags.map((f) => (f.required ? flagWord(f) : `[${flagWord(f)}]`));
  return [c.name, ...args, ...flags].join(" ");
}

/** `--help` of one command: synopsis, summary, each flag. */
export function commandUsage(c: Command): string {
  const width = Math.max(10, ...c.flags.map((f) => flagWord(f).length)) + 2;
  const lines = [`Usage: npm run cli -- ${synopsis(c)}`, "", `  ${c.summary}`];
  if (c.flags.length) lines.push("", ...c.flags.map((f) => `  ${flagWord(f).padEnd(width)}${f.help}${f.required ? " (required)" : ""}`));
  lines.push(`  ${"-h, --help".padEnd(width)}this help`);
  if (c.notes) lines.push("", c.notes);
  return lines.join("\n");
}

/** The overview: every command (or a group's) with its summary. */
export function overview(commands: Command[], title: string): string {
  const width = Math.max(...commands.map((c) => c.name.length)) + 2;
  return [
    title,
    "",
    ...commands.map((c) => `  ${c.name.padEnd(width)}${c.summary}`),
    "",
    "`npm run cli -- COMMAND --help` for a command's flags.",
    "Environment: DATA_DIR, DATABASE_URL (as for the server) for org/key commands; VIDLIVE_API_URL, VIDLIVE_API_KEY for listen/trigger.",
  ].join("\n");
}
