import { Elysia } from "elysia";
import type { SettingsDeps } from "./deps.ts";

/** Placeholder until the section lands (S2 writes it). */
export function videosPages(_deps: SettingsDeps) {
  return new Elysia();
}
