import type { Command } from "../command.ts";
import { keyCommands } from "./key.ts";
import { orgCommands } from "./org.ts";
import { webhookCommands } from "./webhooks.ts";

/**
 * Every command of the CLI, in the order `--help` lists them. A command is a
 * name, its flags (parsed strictly from this spec), a summary and `run`; add
 * one by appending to its group's array (or a new group file here).
 */
export const COMMANDS: Command[] = [...orgCommands, ...keyCommands, ...webhookCommands];
