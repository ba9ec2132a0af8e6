import type { Flag } from "../command.ts";

/** The flags the `org …` and `key …` commands share, so their help reads the same. */
export const json: Flag = { name: "json", help: "print JSON" };
export const org: Flag = { name: "org", value: "ID", required: true, help: "the organization (org_…)" };
