/**
 * A real SMTP server (npm `smtp-server`) on a free loopback port, keeping
 * every message it is given: what an invitation's recipient finds in their
 * mailbox. Plain SMTP, no STARTTLS, no authentication (SMTP_URL
 * `smtp://127.0.0.1:PORT`).
 */
import type { AddressInfo } from "node:net";
import { SMTPServer } from "smtp-server";

export interface Mail {
  from: string;
  to: string[];
  raw: string;
  /** The text body, quoted-printable decoded. */
  text: string;
}

export interface SmtpInbox {
  url: string;
  mails: Mail[];
  /** The first message to `to` (waits for it). */
  waitFor(to: string, timeoutMs?: number): Promise<Mail>;
  close(): Promise<void>;
}

const decodeQuotedPrintable = (s: string) => s.replace(/=\r?\n/g, "").replace(/=([0-9A-F]{2})/g, (_, h) => String.fromCharCode(Number.parseInt(h, 16)));

function textOf(raw: string): string {
  const split = raw.indexOf("\r\n\r\n");
  const head = raw.slice(0, split);
  const body = raw.slice(split + 4);
  return /content-transfer-encoding:\s*quoted-printable/i.test(head) ? decodeQuotedPrintable(body) : body;
}

export async function startSmtpInbox(): Promise<SmtpInbox> {
  const mails: Mail[] = [];
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ["STARTTLS", "AUTH"],
    logger: false,
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on("data", (c: Buffer) => chunks.push(c));
      stream.on("end", () => {
        const raw = Buffer.concat(chunks).toString("utf8");
        mails.push({
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : "",
          to: session.envelope.rcptTo.map((r) => r.address),
          raw,
          text: textOf(raw),
        });
        callback();
      });
    },
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.server.address() as AddressInfo).port;
  return {
    url: `smtp://127.0.0.1:${port}`,
    mails,
    async waitFor(to, timeoutMs = 30_000) {
      const until = Date.now() + timeoutMs;
      for (;;) {
        const m = mails.find((x) => x.to.includes(to));
        if (m) return m;
        if (Date.now() > until) throw new Error(`no mail to ${to} within ${timeoutMs} ms`);
        await Bun.sleep(50);
      }
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The settings setup link in a mail's text. */
export function setupLinkIn(mail: Mail): string {
  const m = /https?:\/\/\S+\/settings\/setup\/[A-Za-z0-9_-]+/.exec(mail.text);
  if (!m) throw new Error(`no setup link in:\n${mail.text}`);
  return m[0];
}
