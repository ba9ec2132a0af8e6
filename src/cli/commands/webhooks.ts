import { randomToken } from "../../ids.ts";
import { EVENT_NAMES, isEventName } from "../../webhooks/event-names.ts";
import { CliUsageError, one, opt, type CliContext, type Command } from "../command.ts";
import { ListenRefused, runListen } from "../listen-client.ts";
import { clientServiceUrl, serviceOrigin } from "../../service-address.ts";

const httpUrl = (v: string) => {
  try {
    const u = new URL(v);
    return u.protocol === "http:" || u.protocol === "https:" ? undefined : `must be an http(s) URL, got "${v}"`;
  } catch {
    return `must be an http(s) URL, got "${v}"`;
  }
};
const eventList = (v: string) => {
  const bad = v.split(",").filter((e) => !isEventName(e.trim()));
  return bad.length ? `unknown event "${bad[0]}" (known: ${EVENT_NAMES.join(", ")})` : undefined;
};

const apiFlags = [
  {
    name: "api-url",
    value: "URL",
    check: httpUrl,
    help: "the service, with or without /api/public/v1 (default $VIDLIVE_API_URL, else the address npm start recorded in DATA_DIR, else http://localhost:8080)",
  },
  { name: "api-key", value: "KEY", help: "the organization's API key (default $VIDLIVE_API_KEY)" },
];

/** Where the service is and the key to use: flags, then VIDLIVE_API_URL / VIDLIVE_API_KEY. */
function api(ctx: CliContext): { apiUrl: string; apiKey: string } {
  const given = opt(ctx, "api-url");
  const apiUrl = given === undefined ? clientServiceUrl(ctx.env) : serviceOrigin(given);
  const wrong = httpUrl(apiUrl);
  if (wrong) throw new CliUsageError(`VIDLIVE_API_URL ${wrong}`);
  const apiKey = opt(ctx, "api-key") ?? ctx.env.VIDLIVE_API_KEY;
  if (!apiKey) throw new CliUsageError("--api-key (or VIDLIVE_API_KEY) is required");
  return { apiUrl: apiUrl.replace(/\/+$/, ""), apiKey };
}

const NOTES = "Needs a key whose organization has the webhooks.manage permission. Talks to the service over HTTP, so it works against a remote one too.";

/** Webhooks on a laptop (issue 16): like `stripe listen` and `stripe trigger`, through the running service's API. */
export const webhookCommands: Command[] = [
  {
    name: "listen",
    summary: "forward this organization's events to a local URL, signed with a session secret",
    flags: [
      { name: "forward-to", value: "URL", required: true, check: httpUrl, help: "your receiver, e.g. http://localhost:3000/hooks" },
      { name: "events", value: "A,B", check: eventList, help: "only these events (default: all)" },
      ...apiFlags,
    ],
    notes: `${NOTES}\nPrints a signing secret (whsec_…) for this session: give it to your receiver as its endpoint secret.\nEach event is POSTed with X-Service-Event, X-Service-Delivery and X-Service-Signature, as a registered endpoint gets it.\nA dropped connection reconnects and resumes after the last event forwarded.`,
    async run(ctx) {
      const { apiUrl, apiKey } = api(ctx);
      const forwardTo = one(ctx, "forward-to");
      const events = (opt(ctx, "events") ?? "")
        .split(",")
        .map((e) => e.trim())
        .filter(Boolean);
      // A fresh secret per session, shaped like an endpoint's: the receiver verifies it the same way.
      const secret = `whsec_${randomToken(32)}`;
      console.log(`Signing secret for this session: ${secret}`);
      const stop = new AbortController();
      for (const sig of ["SIGINT", "SIGTERM"] as const) process.once(sig, () => stop.abort());
      try {
        await runListen({ apiUrl, apiKey, forwardTo, events, secret, signal: stop.signal, print: (l) => console.log(l), warn: (l) => console.error(l) });
      } catch (err) {
        if (err instanceof ListenRefused) {
          console.error(err.message);
          return 1;
        }
        throw err;
      }
      return 0;
    },
  },
  {
    name: "trigger",
    summary: "send a realistic test event to this organization's listeners",
    args: [{ name: "EVENT", required: true }],
    flags: [...apiFlags, { name: "json", help: "print JSON" }],
    notes: `${NOTES}\nEVENT: ${EVENT_NAMES.join(", ")}.\nThe sample reaches \`listen\` sessions only, not registered endpoints (POST /webhooks/{id}/test/ does that).`,
    async run(ctx) {
      const event = ctx.args[0]!;
      if (!isEventName(event)) throw new CliUsageError(`unknown event "${event}" (known: ${EVENT_NAMES.join(", ")})`);
      const { apiUrl, apiKey } = api(ctx);
      const res = await fetch(`${apiUrl}/api/public/v1/webhooks/trigger/`, {
        method: "POST",
        headers: { authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
        body: JSON.stringify({ event }),
      });
      const body = (await res.json().catch(() => null)) as { data?: { id: string; seq: number }; error?: { code: string }; message?: string } | null;
      if (res.status !== 201 || !body?.data) {
        console.error(`${body?.error?.code ?? `HTTP ${res.status}`}: ${body?.message ?? "the service refused the event"}`);
        return 1;
      }
      console.log(ctx.json ? JSON.stringify({ id: body.data.id, event, seq: body.data.seq }) : `Triggered ${event}: ${body.data.id}`);
      return 0;
    },
  },
];
