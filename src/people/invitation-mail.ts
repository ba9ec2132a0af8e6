import nodemailer from "nodemailer";
import type { Config } from "../config.ts";
import { setupUrl } from "./people-rules.ts";

/**
 * Invitation mail (issue 23): with SMTP_URL set, a setup link goes to the
 * invited address itself, never to the inviter's screen or terminal, so using
 * it proves the email (docs/decisions.md "Accounts"). nodemailer over the
 * operator's SMTP server; the link is never logged.
 */
export interface InvitationMailer {
  /** Checks the server answers (the CLI, before it creates an organization). */
  verify(): Promise<void>;
  send(invite: { to: string; token: string; orgName: string; role: string }): Promise<void>;
}

const TIMEOUTS = { connectionTimeout: 10_000, greetingTimeout: 10_000, socketTimeout: 20_000 };

/** The mailer of this configuration, or null when SMTP_URL is unset (links are shown to the inviter). */
/** `baseUrl`: the service's public origin, read when a link is made (src/bound-address.ts). */
export function invitationMailer(config: Pick<Config, "smtpUrl" | "mailFrom">, baseUrl: () => string): InvitationMailer | null {
  if (!config.smtpUrl) return null;
  const transport = nodemailer.createTransport({ url: config.smtpUrl, ...TIMEOUTS });
  return {
    async verify() {
      await transport.verify();
    },
    async send({ to, token, orgName, role }) {
      const link = setupUrl(baseUrl(), token);
      await transport.sendMail({
        from: config.mailFrom,
        to,
        subject: `Your invitation to ${orgName} on vidlive`,
        text: [
          `You were invited to ${orgName} as ${role}.`,
          "",
          "Open this link to accept (it works once and expires in 72 hours):",
          link,
          "",
          "If you already have a vidlive account for this address, the page asks for its password; otherwise you choose one.",
          "If you did not expect this invitation, ignore this message.",
        ].join("\n"),
      });
    },
  };
}

/** SMTP errors name the server's answer; the message is shown to the inviter, so no credentials of SMTP_URL. */
export function mailFailure(err: unknown): string {
  const e = err as { code?: string; responseCode?: number; message?: string };
  return [e.code, e.responseCode].filter(Boolean).join(" ") || "the mail server did not accept the message";
}
