import type { Database, Db } from "../db/create-database.ts";
import { InvalidInput } from "../errors.ts";
import { randomToken } from "../ids.ts";
import type { Role } from "./types.ts";

/**
 * The rules every part of people shares: lifetimes, the email and password
 * checks, how secrets are made and stored (SHA-256 only, so a copy of the
 * database signs nobody in), and the setup link's address.
 */

export const SETUP_TTL_MS = 72 * 3600_000;
/** A session ends 12 h after its last request, and 7 days after sign-in whatever happens. */
export const SESSION_IDLE_MS = 12 * 3600_000;
export const SESSION_MAX_MS = 7 * 24 * 3600_000;
export const MIN_PASSWORD_LENGTH = 10;
export const INVITABLE_ROLES = ["admin", "developer", "viewer"] as const satisfies readonly Role[];

/** What each part of people is built with: the database and the clock (tests move it). */
export interface PeopleContext {
  database: Database;
  db: Db;
  now: () => number;
}

/** 256 bits: a setup link or a session cookie cannot be guessed. */
export const newSecret = () => randomToken(43);

export function sha256(s: string): string {
  return new Bun.CryptoHasher("sha256").update(s).digest("hex");
}

export function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function checkEmail(email: string): string {
  const e = normalizeEmail(email);
  if (e.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) throw new InvalidInput({ email: "must be an email address" }, "email must be an email address");
  return e;
}

export function checkPassword(password: string): void {
  if (password.length < MIN_PASSWORD_LENGTH) throw new InvalidInput({ password: `must be at least ${MIN_PASSWORD_LENGTH} characters` }, `password must be at least ${MIN_PASSWORD_LENGTH} characters`);
  if (password.length > 1024) throw new InvalidInput({ password: "must be at most 1024 characters" }, "password must be at most 1024 characters");
}

/** The setup page of a token, as printed by the CLI and shown on the Members section. */
export function setupUrl(baseUrl: string, token: string): string {
  return `${baseUrl.replace(/\/+$/, "")}/settings/setup/${token}`;
}
